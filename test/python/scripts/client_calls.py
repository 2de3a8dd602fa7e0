"""Every call of steward.Client against a real server (test/python/client.test.ts starts it).

Environment: STEWARD_URL and STEWARD_TOKEN (admin), USER_TOKEN (a user's, rate-limited to one
submit a second), READER_TOKEN, WORK (a scratch folder), EXAMPLES (the repository's examples/).
Prints one line per check; any failure raises, and the test shows the traceback.
"""

import json
import os
import sys
import time

import steward

ADMIN = steward.Client.from_env()
URL = os.environ["STEWARD_URL"]
WORK = os.environ["WORK"]
EXAMPLES = os.environ["EXAMPLES"]


def check(name):
    print(f"ok {name}", flush=True)


def expect_error(kind, call, contains=""):
    try:
        call()
    except kind as error:
        assert contains in error.message, f"{kind.__name__}: {error.message!r} lacks {contains!r}"
        return error
    raise AssertionError(f"expected {kind.__name__}")


# ---- submit, in each form it takes

# A YAML job file with an input: the server reads it (a dry run) to name the inputs to upload.
hello = ADMIN.submit(os.path.join(EXAMPLES, "hello", "job.yaml"))
job = ADMIN.wait(hello, timeout=60)
assert job["state"] == "succeeded", job["state"]
assert job["spec"]["inputs"] == ["text.txt"], job["spec"]
assert b"counting on" in ADMIN.logs(hello), ADMIN.logs(hello)
written = ADMIN.fetch(hello, os.path.join(WORK, "hello"))
assert written == [os.path.join(WORK, "hello", "counts.txt")], written
with open(written[0]) as file:
    assert "the" in file.read()
check("submit a YAML file with inputs, wait, logs, fetch")

# A dict with inputs relative to base_dir, as an array: fetch writes DIR/<task>/<path>.
os.makedirs(os.path.join(WORK, "in", "data"), exist_ok=True)
with open(os.path.join(WORK, "in", "data", "words.txt"), "w") as file:
    file.write("one two three\n")
array = ADMIN.submit(
    {
        "name": "array",
        "command": 'mkdir -p out && wc -w < data/words.txt > out/count && echo "$STEWARD_TASK_INDEX" >> out/count',
        "inputs": ["data/words.txt"],
        "outputs": ["out/count"],
        "array": {"count": 3},
    },
    base_dir=os.path.join(WORK, "in"),
)
assert ADMIN.wait(array, timeout=60)["state"] == "succeeded"
written = ADMIN.fetch(array, os.path.join(WORK, "array"))
assert sorted(written) == [os.path.join(WORK, "array", str(t), "out", "count") for t in range(3)], written
for task in range(3):
    with open(os.path.join(WORK, "array", str(task), "out", "count")) as file:
        assert file.read().split() == ["3", str(task)]
assert ADMIN.logs(array, task=2) == b""
check("submit a dict with inputs (base_dir), an array fetched as DIR/<task>/<path>")

# YAML text without inputs goes as it is; JSON text; a .json file whose inputs sit beside it.
yaml_text = ADMIN.submit("name: text\ncommand: echo from yaml text\n")
json_text = ADMIN.submit(json.dumps({"name": "json", "command": "echo from json text"}))
with open(os.path.join(WORK, "in", "job.json"), "w") as file:
    json.dump({"name": "file", "command": "cat data/words.txt", "inputs": ["data/words.txt"]}, file)
json_file = ADMIN.submit(os.path.join(WORK, "in", "job.json"))
for job_id, said in ((yaml_text, b"from yaml text\n"), (json_text, b"from json text\n"), (json_file, b"one two three\n")):
    assert ADMIN.wait(job_id, timeout=60)["state"] == "succeeded"
    assert ADMIN.logs(job_id) == said, ADMIN.logs(job_id)
check("submit YAML text, JSON text, a .json file")

# The same Idempotency-Key makes one job.
keyed = ADMIN.submit({"name": "keyed", "command": "true"}, idempotency_key="python-test-key")
again = ADMIN.submit({"name": "keyed", "command": "true"}, idempotency_key="python-test-key")
assert keyed == again, (keyed, again)
check("a submit repeated with its key answers the same job")

# ---- errors, each with the API's message and code

error = expect_error(steward.Invalid, lambda: ADMIN.submit({"name": "x"}), "command")
assert error.code == "invalid" and error.field == "command" and error.status == 400, vars(error)
error = expect_error(steward.Invalid, lambda: ADMIN.submit("name: x\ncommand: echo\ninputz: [a]\n"), "unknown key")
assert error.field == "inputz", vars(error)
error = expect_error(steward.Invalid, lambda: ADMIN.submit("name: x\ncommand: echo\ninputs: [nothere.txt]\n", base_dir=WORK))
assert error.field == "inputs[0]" and "no such file" in error.message, vars(error)
error = expect_error(steward.NotFound, lambda: ADMIN.job("9999"), "no job 9999")
assert error.code == "not_found" and error.status == 404
expect_error(steward.Unauthorized, lambda: list(steward.Client(URL, "sta_wrong_token").jobs()))
reader = steward.Client(URL, os.environ["READER_TOKEN"])
expect_error(steward.Forbidden, lambda: reader.submit({"name": "r", "command": "true"}))
user = steward.Client(URL, os.environ["USER_TOKEN"])
user.submit({"name": "u1", "command": "true"})
error = expect_error(steward.RateLimited, lambda: user.submit({"name": "u2", "command": "true"}), "too many submits")
assert error.retry_after is not None and error.retry_after >= 1, vars(error)
expect_error(steward.TooLarge, lambda: ADMIN.submit({"name": "big", "command": "true", "env": {"X": "x" * (1 << 20)}}), "1 MiB")
check("errors: Invalid, NotFound, Unauthorized, Forbidden, RateLimited, TooLarge")

# ---- control

long = ADMIN.submit({"name": "long", "command": "echo started; sleep 60", "checkpoint": {"graceSeconds": 1}})
deadline = time.time() + 30
while ADMIN.logs(long) != b"started\n":
    assert time.time() < deadline, "the long job never started"
    time.sleep(0.1)
expect_error(steward.Conflict, lambda: ADMIN.remove(long))
expect_error(steward.WaitTimeout, lambda: ADMIN.wait(long, timeout=0.5), "still running")
expect_error(steward.NotFound, lambda: ADMIN.migrate(long, to="nowhere"), "nowhere")
assert ADMIN.hold(long)["state"] in ("running", "held")
deadline = time.time() + 30
while ADMIN.job(long, tasks=False, events=False)["state"] != "held":
    assert time.time() < deadline, "never held"
    time.sleep(0.1)
ADMIN.release(long)
ADMIN.cancel(long)
assert ADMIN.wait(long, timeout=30)["state"] == "cancelled"
assert ADMIN.remove(long) == {"id": long, "removed": True}
expect_error(steward.NotFound, lambda: ADMIN.job(long))
check("hold, release, cancel, remove; Conflict, WaitTimeout, migrate to an unknown host")

# ---- update a queued job, retry failed tasks, cancel some tasks, the fair-share tree

queued = ADMIN.submit({"name": "queued", "command": "true", "requirements": 'host.name == "nowhere"'})
updated = ADMIN.update(queued, {"priority": 4, "requirements": None})
assert updated["priority"] == 4, updated
assert ADMIN.wait(queued, timeout=30)["state"] == "succeeded"
expect_error(steward.Conflict, lambda: ADMIN.update(queued, {"priority": 1}), "succeeded")
flaky = ADMIN.submit(
    {
        "name": "flaky",
        "command": f'test "$STEWARD_TASK_INDEX" != 1 || test -e {WORK}/flaky-again || {{ touch {WORK}/flaky-again; exit 1; }}',
        "array": {"count": 3},
    }
)
assert ADMIN.wait(flaky, timeout=30)["state"] == "failed"
retried = ADMIN.retry(flaky, failed=True)
assert retried["retried"] == [1] and retried["skipped"] == [], retried
assert ADMIN.wait(flaky, timeout=30)["state"] == "succeeded"
sleepers = ADMIN.submit({"name": "sleepers", "command": "sleep 60", "array": {"count": 2}})
ADMIN.cancel(sleepers, tasks=[0, 1])
assert ADMIN.wait(sleepers, timeout=30)["state"] == "cancelled"
tree = ADMIN.shares()
assert tree["halfLifeSeconds"] == 7 * 86400, tree
assert any(line["kind"] == "user" and line["factor"] is not None for line in tree["lines"]), tree
check("update, retry(failed=True), cancel(tasks=...), shares")

# ---- listing, paged by the Link header

everything = [summary["id"] for summary in ADMIN.jobs(all=True)]
paged = [summary["id"] for summary in ADMIN.jobs(all=True, limit=2)]
assert everything == paged and len(everything) >= 6, (everything, paged)
assert [s["id"] for s in ADMIN.jobs(all=True, limit=3, after=everything[1])] == everything[2:]
assert [s["id"] for s in user.jobs(all=True)] == [s["id"] for s in ADMIN.jobs(all=True, user="pyuser")] != []
assert [h["name"] for h in ADMIN.hosts()] == ["p1"]
check("jobs (all, limit through Link, after, user), hosts")

# ---- a followed log, and events

followed = ADMIN.submit({"name": "follow", "command": "for i in 1 2 3; do echo line $i; sleep 0.4; done"})
chunks = list(ADMIN.logs(followed, follow=True))
assert b"".join(chunks) == b"line 1\nline 2\nline 3\n", chunks
assert ADMIN.job(followed, tasks=False, events=False)["state"] in ("running", "succeeded")
events = ADMIN.events(after=0, job=followed)
kinds = []
for event in events:
    assert event["jobId"] == followed
    kinds.append(event["kind"])
    if event["kind"] == "state" and event["data"]["to"] == "succeeded":
        break
events.close()
assert kinds[0] == "submitted" and "attempt.placed" in kinds, kinds
stored = [e["id"] for e in ADMIN.job(followed)["events"]]
assert stored[: len(kinds)] == sorted(stored[: len(kinds)])
check("logs(follow=True), events(after=0, job=...)")

# ---- the job side inside a real job

sdk_job = ADMIN.submit(
    {
        "name": "sdk",
        "command": [
            "python3",
            "-c",
            "import json, os, time\n"
            "from steward import job\n"
            "assert job.checkpoint_dir() == os.environ['STEWARD_CHECKPOINT_DIR']\n"
            "job.progress(0.5)\n"
            "job.set_requirements('host.cpus >= 1.0')\n"
            "job.save_checkpoint({'n': 1})\n"
            "print(json.dumps({'gang': job.gang(), 'restarted': job.restarted(), 'stop': job.stop_requested(),\n"
            "                  'loaded': job.load_checkpoint(), 'path': os.environ['STEWARD_PYTHONPATH']}))\n"
            "time.sleep(3)\n",
        ],
    }
)
job = ADMIN.wait(sdk_job, timeout=60)
assert job["state"] == "succeeded", (job["state"], ADMIN.logs(sdk_job, stream="stderr"))
seen = json.loads(ADMIN.logs(sdk_job))
assert seen["gang"] == {"rank": 0, "count": 1, "coordinator": None, "nodes": [], "nodes_file": None}, seen
assert seen["restarted"] is False and seen["stop"] is False and seen["loaded"] == {"n": 1}, seen
assert os.path.samefile(seen["path"], os.path.join(EXAMPLES, "..", "python")), seen
changed = [e for e in job["events"] if e["kind"] == "requirements.changed"]
assert changed and changed[0]["data"]["requirements"] == "host.cpus >= 1.0", job["events"]
check("a job imports steward with no install: progress, requirements, checkpoint, gang")

print("all done", flush=True)
sys.exit(0)

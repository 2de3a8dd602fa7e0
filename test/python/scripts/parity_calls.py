"""The Python client's calls at parity with the CLI, against a real `steward up`
(test/python/parity.test.ts starts it): workflows (submit a file, show, wait, retry, cancel), a
Job handle whose wait() raises for a failed job, dry run, explain, the states and cancels of many
jobs at once, acct, shares and QoS, and the asyncio wait and events.

Environment: STEWARD_URL and STEWARD_TOKEN (admin), USER_TOKEN (a user's, QoS normal and high),
WORK (a scratch folder). Prints one line per check; any failure raises, and the test shows the
traceback.
"""

import asyncio
import json
import os
import sys
import time

import steward

ADMIN = steward.Client.from_env()
URL = os.environ["STEWARD_URL"]
WORK = os.environ["WORK"]


def check(name):
    print(f"ok {name}", flush=True)


def expect_error(kind, call, contains=""):
    try:
        call()
    except kind as error:
        message = getattr(error, "message", str(error))
        assert contains in message, f"{kind.__name__}: {message!r} lacks {contains!r}"
        return error
    raise AssertionError(f"expected {kind.__name__}")


def job_count():
    return len(list(ADMIN.jobs(all=True)))


# ---- a workflow file with inputs, submitted by its path (YAML: the server names the inputs)

os.makedirs(os.path.join(WORK, "flow", "data"), exist_ok=True)
with open(os.path.join(WORK, "flow", "data", "words.txt"), "w") as file:
    file.write("one two three\n")
with open(os.path.join(WORK, "flow", "flow.yaml"), "w") as file:
    file.write(
        "name: counting\n"
        "jobs:\n"
        "  count:\n"
        "    command: wc -w < data/words.txt > n.txt\n"
        "    inputs: [data/words.txt]\n"
        "    outputs: [n.txt]\n"
        "  report:\n"
        "    command: echo reported\n"
        "    dependsOn: [count]\n"
    )
flow = ADMIN.submit(os.path.join(WORK, "flow", "flow.yaml"))
assert isinstance(flow, steward.Workflow) and flow.startswith("flow-"), repr(flow)
assert flow.name == "counting" and sorted(flow.jobs) == ["count", "report"], (flow.name, flow.jobs)
done = flow.wait(timeout=60)
assert done["state"] == "succeeded" and [j["state"] for j in done["graph"]] == ["succeeded"] * 2, done
assert flow.jobs["report"].logs() == b"reported\n"
assert flow.jobs["count"].info()["spec"]["inputs"] == ["data/words.txt"]
written = flow.jobs["count"].fetch(os.path.join(WORK, "flow-out"))
with open(written[0]) as file:
    assert file.read().strip() == "3"
shown = ADMIN.workflow(flow)
assert shown["workflow"] == flow and shown["owner"] == "admin" and shown["jobs"] == dict(flow.jobs), shown
assert ADMIN.handle(str(flow)).jobs == flow.jobs and flow.state == "succeeded"
check("submit a YAML workflow file with inputs, wait, show, a job's logs and outputs")

# ---- a workflow as a dict whose job fails: wait raises WorkflowFailed; retry; cancel

marker = os.path.join(WORK, "second-time")
failing = ADMIN.submit(
    {
        "jobs": {
            "first": {"command": f"test -e {marker} || {{ touch {marker}; exit 3; }}"},
            "then": {"command": "echo then", "dependsOn": ["first"]},
        }
    }
)
assert isinstance(failing, steward.Workflow), repr(failing)
try:
    failing.wait(timeout=60)
    raise AssertionError("a failed workflow's wait returned")
except steward.WorkflowFailed as error:
    assert error.state == "failed" and error.workflow_id == failing, vars(error)
    assert {job["name"]: job["state"] for job in error.failed_jobs} == {"first": "failed", "then": "cancelled"}, error.failed_jobs
    assert "first (job" in error.message, error.message
assert ADMIN.wait(failing, timeout=10)["state"] == "failed"  # Client.wait answers without check
retried = failing.retry()
# The failed job and the one cancelled for it are rerun; the second waits for the first again.
assert [(each["name"], each["tasks"]) for each in retried["retried"]] == [("first", [0]), ("then", [0])], retried
assert failing.wait(timeout=60)["state"] == "succeeded"
sleeping = ADMIN.submit_workflow(
    {"jobs": {"nap": {"command": "sleep 60", "checkpoint": {"graceSeconds": 1}}, "after": {"command": "true", "dependsOn": ["nap"]}}}
)
cancelled = sleeping.cancel()
assert cancelled["workflow"] == sleeping
expect_error(steward.WorkflowFailed, lambda: sleeping.wait(timeout=30), "cancelled")
expect_error(ValueError, lambda: ADMIN.retry(sleeping, failed=True), "takes neither")
check("a failing workflow: WorkflowFailed, retry, cancel")

# ---- a Job handle: wait() raises JobFailed for a failed job

failed = ADMIN.submit({"name": "fails", "command": 'test "$STEWARD_TASK_INDEX" = 0 || exit 7', "array": {"count": 3}})
assert isinstance(failed, steward.Job) and failed == failed.id and isinstance(failed.id, str)
try:
    failed.wait(timeout=60)
    raise AssertionError("a failed job's wait returned")
except steward.JobFailed as error:
    assert not isinstance(error, steward.JobCancelled)
    assert error.state == "failed" and error.job_id == failed, vars(error)
    assert [task["index"] for task in error.failed_tasks] == [1, 2], error.failed_tasks
    assert error.failed_tasks[0]["attempts"][-1]["exitCode"] == 7, error.failed_tasks
    assert error.job["state"] == "failed" and error.message.startswith(f"job {failed} failed: task 1"), error.message
# Client.wait keeps answering the job, failed or not, unless asked to check.
assert ADMIN.wait(failed)["state"] == "failed"
expect_error(steward.JobFailed, lambda: ADMIN.wait(failed, check=True), f"job {failed} failed")
ok = ADMIN.submit({"name": "ok", "command": "echo fine; echo oops >&2"})
assert ok.wait(timeout=60)["state"] == "succeeded" and ok.state == "succeeded"
assert ok.logs() == b"fine\n" and ok.logs(stream="stderr") == b"oops\n"
napping = ADMIN.handle(ADMIN.submit({"name": "nap", "command": "sleep 60", "checkpoint": {"graceSeconds": 1}}))
napping.cancel()
error = expect_error(steward.JobCancelled, lambda: napping.wait(timeout=30), "cancelled")
assert error.state == "cancelled" and isinstance(error, steward.JobFailed)
check("Job.wait raises JobFailed (failed tasks, exit codes) and JobCancelled; stderr")

# ---- dry run and explain: nothing is made

before = job_count()
with open(os.path.join(WORK, "flow", "job.yaml"), "w") as file:
    file.write("name: dry\ncommand: cat data/words.txt\ninputs: [data/words.txt]\nresources: {cpus: 1}\n")
dry = ADMIN.dry_run(os.path.join(WORK, "flow", "job.yaml"))
assert dry["spec"]["name"] == "dry" and dry["spec"]["retry"]["maxAttempts"] == 1, dry["spec"]
assert dry["explanation"]["state"] == "pending" and dry["explanation"]["summary"]["matching"] >= 1, dry["explanation"]
assert "explanation" not in ADMIN.dry_run({"command": "true"}, explain=False)
error = expect_error(steward.Invalid, lambda: ADMIN.dry_run("name: x\ncommand: echo\nrank: [1\n"), "not valid YAML")
expect_error(steward.Invalid, lambda: ADMIN.dry_run("command: cat nothere\ninputs: [nothere.txt]\n", base_dir=WORK), "no such file")
nowhere = ADMIN.dry_run({"command": "true", "requirements": 'host.name == "nowhere"'})
assert nowhere["explanation"]["summary"]["matching"] == 0, nowhere["explanation"]
checked = ADMIN.dry_run(os.path.join(WORK, "flow", "flow.yaml"))
checked_jobs = {each["name"]: each for each in checked["jobs"]}
assert sorted(checked_jobs) == ["count", "report"] and checked_jobs["count"]["spec"]["inputs"] == ["data/words.txt"], checked
assert "explanation" in checked_jobs["count"], checked
expect_error(steward.Invalid, lambda: ADMIN.dry_run({"jobs": {"a": {"command": "true", "dependsOn": ["b"]}}}), "no job named b")
assert job_count() == before, (job_count(), before)
waiting = ADMIN.submit({"name": "stuck", "command": "true", "requirements": 'host.name == "nowhere"'})
explained = waiting.explain()
assert explained["id"] == waiting and explained["state"] == "pending" and explained["summary"]["matching"] == 0, explained
assert ADMIN.explain(waiting) == explained or ADMIN.explain(waiting)["id"] == waiting
waiting.cancel()
expect_error(steward.NotFound, lambda: ADMIN.explain("99999"))
check("dry_run (job with inputs, explain, errors, workflow), explain")

# ---- many jobs at once: job_states and cancel_jobs, as `steward status ID...` and `steward cancel ID...`

held = ADMIN.submit({"name": "many", "command": "true", "requirements": 'host.name == "nowhere"'})
named = [held, ok, "99999"]
assert ADMIN.job_states(named) == {held: "pending", ok: "succeeded", "99999": None}
assert list(ADMIN.job_states(named)) == named and ADMIN.job_states([]) == {}
assert ADMIN.job_states(held) == {held: "pending"}
other = steward.Client(URL, os.environ["USER_TOKEN"])
# Another user's jobs: their states are not told, their cancels leave them alone.
assert other.job_states(named) == {held: None, ok: None, "99999": None}
assert other.cancel_jobs([held]) == {held: None} and held.state == "pending"
# The ended job is left as it is, the missing id answers None; sent twice, the same answer.
assert ADMIN.cancel_jobs(named) == {held: "cancelled", ok: "succeeded", "99999": None}
assert ADMIN.cancel_jobs(named) == {held: "cancelled", ok: "succeeded", "99999": None}
assert ADMIN.job_states(named) == {held: "cancelled", ok: "succeeded", "99999": None}
expect_error(steward.Invalid, lambda: ADMIN.job_states([""]))
check("job_states and cancel_jobs (a pending job, an ended one, a missing id, another user's token)")

# ---- acct, shares, QoS

rows = ADMIN.acct()
mine = [row for row in rows if row["job"] == ok]
assert len(mine) == 1 and mine[0]["outcome"] == "succeeded" and mine[0]["exitCode"] == 0, mine
assert mine[0]["usage"] is None or mine[0]["usage"]["wallSeconds"] >= 0, mine
assert [row["job"] for row in ADMIN.acct(since=None, limit=2)] == [row["job"] for row in rows[:2]]
assert ADMIN.acct(since="2999-01-01") == [] and ADMIN.accounting(user="nobody") == []
expect_error(ValueError, lambda: ADMIN.acct(since="yesterday"))
tree = ADMIN.shares()
assert tree["halfLifeSeconds"] > 0 and any(line["kind"] == "user" and line["name"] == "admin" for line in tree["lines"]), tree
user = steward.Client(URL, os.environ["USER_TOKEN"])
assert ADMIN.qos() is None and user.qos() == ["normal", "high"], user.whoami()
assert user.whoami()["user"] == "pyq" and user.acct() == []
assert [line["name"] for line in user.shares()["lines"] if line["kind"] == "user"] == ["pyq"]
check("acct (since, limit, user), shares, qos and whoami")

# ---- asyncio: wait and events


async def main():
    quick = ADMIN.submit({"name": "quick", "command": "echo quick"})
    slow = ADMIN.submit({"name": "slow", "command": "sleep 1; exit 4"})
    results = await asyncio.gather(quick.async_wait(timeout=60), slow.async_wait(timeout=60), return_exceptions=True)
    assert results[0]["state"] == "succeeded", results
    assert isinstance(results[1], steward.JobFailed) and results[1].failed_tasks[0]["index"] == 0, results
    assert (await ADMIN.async_wait(slow))["state"] == "failed"
    # A wait cancelled by a timeout ends at once, leaving no thread polling.
    stuck = ADMIN.submit({"name": "astuck", "command": "true", "requirements": 'host.name == "nowhere"'})
    started = time.monotonic()
    try:
        await asyncio.wait_for(stuck.async_wait(), timeout=0.5)
        raise AssertionError("waited for a job that cannot start")
    except asyncio.TimeoutError:
        pass
    assert time.monotonic() - started < 3
    try:
        await stuck.async_wait(timeout=0.3)
        raise AssertionError("no WaitTimeout")
    except steward.WaitTimeout as error:
        assert error.job["state"] == "pending"
    stuck.cancel()
    # Events of one job, from its first, until it has succeeded.
    lines = ADMIN.submit({"name": "aevents", "command": "sleep 0.5; echo done"})
    kinds = []
    async for event in lines.async_events():
        assert event["jobId"] == lines
        kinds.append(event["kind"])
        if event["kind"] == "state" and event["data"]["to"] == "succeeded":
            break
    assert kinds[0] == "submitted" and "attempt.placed" in kinds, kinds
    # progress=True: the job's task counts come too, as {jobId, state, taskCount, counts}.
    counted = ADMIN.submit({"name": "counted", "command": "sleep 1", "array": {"count": 2}})
    seen = []
    async with ADMIN.async_events(after=0, job=counted, progress=True) as stream:
        async for event in stream:
            if "kind" not in event:
                seen.append(event)
                if event["state"] == "succeeded":
                    break
    assert seen and seen[-1]["taskCount"] == 2 and seen[-1]["counts"]["succeeded"] == 2, seen
    # A live stream (no event comes) cancelled: the task ends at once, the thread is freed.
    idle = ADMIN.async_events(job="99999")
    started = time.monotonic()
    try:
        await asyncio.wait_for(idle.__anext__(), timeout=0.5)
        raise AssertionError("an event for no job")
    except asyncio.TimeoutError:
        pass
    assert time.monotonic() - started < 3
    # A workflow too.
    flow = ADMIN.submit({"jobs": {"a": {"command": "true"}, "b": {"command": "true", "dependsOn": ["a"]}}})
    assert (await flow.async_wait(timeout=60))["state"] == "succeeded"


# Secrets, as `steward secret set|list|rm`: set (new, then replaced), listed without values, removed.
USER = steward.Client(URL, os.environ["USER_TOKEN"])
set_first = USER.set_secret("py-read", {"accessKeyId": "AKIAPY", "secretAccessKey": "py-secret-value"})
assert set(set_first) == {"name", "createdAt", "updatedAt"} and set_first["name"] == "py-read", set_first
USER.set_secret("py-read", {"accessKeyId": "AKIAPY", "secretAccessKey": "py-secret-value", "region": "eu-west-1"})
listed = USER.secrets()
assert [each["name"] for each in listed] == ["py-read"] and "py-secret-value" not in json.dumps(listed), listed
assert ADMIN.secrets() == [], "the admin's secrets are the admin's own"
expect_error(steward.Invalid, lambda: USER.set_secret("py-read", {"accessKeyId": "AKIAPY"}), "secretAccessKey")
assert USER.remove_secret("py-read")["name"] == "py-read"
expect_error(steward.NotFound, lambda: USER.remove_secret("py-read"), "no secret py-read")
check("set_secret, secrets, remove_secret")

started = time.monotonic()
asyncio.run(main())
check(f"async_wait (gather, JobFailed, cancel, WaitTimeout, workflow), async_events (progress) in {time.monotonic() - started:.1f} s")

print("all done", flush=True)
sys.exit(0)

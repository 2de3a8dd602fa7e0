"""steward.futures against a real server and agent (test/python/futures.test.ts starts them).

Environment: STEWARD_URL and STEWARD_TOKEN; SCRIPTS (this folder, for the jobs' PYTHONPATH);
LAMBDAS=1 when cloudpickle is importable (lambdas are tried then). Prints one line per check;
any failure raises, and the test shows the traceback.
"""

import os
import time

import futures_helpers as helpers

import steward
from steward.futures import RemoteTraceback, StewardExecutor, StewardJobError

CLIENT = steward.Client.from_env()
ENV = {"PYTHONPATH": os.environ["SCRIPTS"]}
LAMBDAS = os.environ.get("LAMBDAS") == "1"


def check(name):
    print(f"ok {name}", flush=True)


def job_of(future, timeout=30.0):
    deadline = time.monotonic() + timeout
    while future.steward_job is None:
        assert time.monotonic() < deadline, "the call's job was not submitted"
        time.sleep(0.05)
    return future.steward_job


def wait_state(job, states, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        state = CLIENT.job(job, tasks=False, events=False)["state"]
        if state in states:
            return state
        assert time.monotonic() < deadline, f"job {job} still {state}"
        time.sleep(0.1)


executor = StewardExecutor(CLIENT, env=ENV, time_limit=300)
assert executor.pickler == ("cloudpickle" if LAMBDAS else "pickle"), executor.pickler

# ---- a plain function: its value, computed in a job of its own
future = executor.submit(helpers.square, 12)
assert future.result(timeout=120) == 144
job = CLIENT.job(future.steward_job)
assert job["state"] == "succeeded" and job["name"] == "square", job
assert job["spec"]["resources"]["cpus"] == 1 and job["spec"]["timeLimitSeconds"] == 300, job["spec"]
seen = executor.submit(helpers.where).result(timeout=120)
assert seen["pid"] != os.getpid() and seen["task"] == "0", seen
check("submit a plain function: its value, from a job of its own")

# ---- a lambda (cloudpickle), and keyword arguments
if LAMBDAS:
    offset = 5
    assert executor.submit(lambda x, y=1: x * y + offset, 3, y=4).result(timeout=120) == 17
    check("submit a lambda with keyword arguments")

# ---- map over 20 inputs: the results in order, from one array job
def arrays():
    return [each for each in CLIENT.jobs(all=True) if each["name"] == "map square"]


before = len(arrays())
results = list(executor.map(helpers.square, range(20), timeout=300))
assert results == [x * x for x in range(20)], results
made = arrays()[before:]
assert len(made) == 1 and made[0]["taskCount"] == 20, made
assert list(executor.map(pow, [2, 3, 4], [5, 2, 0], chunksize=2)) == [32, 9, 1]
if LAMBDAS:
    assert list(executor.map(lambda x: -x, range(5))) == [0, -1, -2, -3, -4]
check("map over 20 inputs, in order, one array job; chunksize")

# ---- an exception raised on the host: its own type, the remote traceback as its cause
future = executor.submit(helpers.refuse, "politely")
try:
    future.result(timeout=120)
    raise AssertionError("no exception")
except helpers.Refused as error:
    assert str(error) == "refused politely", error
    assert isinstance(error.__cause__, RemoteTraceback), error.__cause__
    assert "in refuse" in str(error.__cause__) and "Refused: refused politely" in str(error.__cause__)
assert isinstance(future.exception(), helpers.Refused)
mapped = executor.map(helpers.refuse, ["a"])
try:
    next(mapped)
    raise AssertionError("no exception")
except helpers.Refused as error:
    assert str(error) == "refused a"
try:
    executor.submit(int, "not a number").result(timeout=120)
    raise AssertionError("no exception")
except ValueError as error:
    assert "invalid literal" in str(error), error
check("an exception raised remotely is re-raised with its type and remote traceback")

# ---- a job cancelled from outside: StewardJobError naming the job and its state
future = executor.submit(helpers.nap, 120)
job = job_of(future)
wait_state(job, ("running",))
CLIENT.cancel(job)
try:
    future.result(timeout=120)
    raise AssertionError("no exception")
except StewardJobError as error:
    assert error.job_id == job and error.state == "cancelled", (error.job_id, error.state)
    assert f"job {job} cancelled" in str(error), str(error)
    assert isinstance(error, steward.JobFailed)
check("a job cancelled from outside gives StewardJobError")

# ---- a runner that cannot start: failed, its stderr carried
broken = executor.options(python="python3-that-is-not-there")
try:
    broken.submit(helpers.square, 2).result(timeout=120)
    raise AssertionError("no exception")
except StewardJobError as error:
    assert error.state == "failed" and "exit code 127" in str(error), str(error)
check("a job whose runner fails gives StewardJobError with its reason")

# ---- options(): other resources for some calls
wide = executor.options(cpus=2, memory_mb=64, name="wide")
future = wide.submit(helpers.square, 3)
assert future.result(timeout=120) == 9
spec = CLIENT.job(future.steward_job, tasks=False, events=False)["spec"]
assert spec["name"] == "wide" and spec["resources"]["cpus"] == 2 and spec["resources"]["memoryMb"] == 64, spec
check("options() submits with other resources")

# ---- a future cancelled before its job ran cancels the job
nowhere = executor.options(requirements='host.name == "nowhere"')
future = nowhere.submit(helpers.square, 4)
job = job_of(future)
assert future.cancel() and future.cancelled()
assert wait_state(job, ("cancelled", "succeeded", "failed")) == "cancelled"
check("cancelling a future cancels its job")

# ---- shutdown(cancel_futures=True): the queued jobs are cancelled
queued = [nowhere.submit(helpers.square, n) for n in range(3)]
jobs = [job_of(each) for each in queued]
for each in jobs:
    assert wait_state(each, ("pending",)) == "pending"
executor.shutdown(wait=True, cancel_futures=True)
assert all(each.cancelled() for each in queued)
states = [CLIENT.job(each, tasks=False, events=False)["state"] for each in jobs]
assert states == ["cancelled"] * 3, states
try:
    executor.submit(helpers.square, 1)
    raise AssertionError("submitted after shutdown")
except RuntimeError:
    pass
check("shutdown(cancel_futures=True) cancels the queued jobs")

print("all done", flush=True)

"""StewardExecutor over a fake client that runs each job's runner in process: futures and their
results, map's order and chunks, cancelling (a future, a map left early, shutdown), a job ended
without a result, and one event stream for every job rather than a poll per future."""

import concurrent.futures
import os
import pickle
import threading
import time
import unittest

import steward
from steward import _futures_runner as runner
from steward._futures_payload import CALL_FILE, RESULT_FILE, RUNNER_FILE
from steward.futures import StewardExecutor, StewardJobError

NOWHERE = 'host.name == "nowhere"'


class Answer:
    def __init__(self, data):
        self.data = data

    def read(self):
        return self.data


class FakeClient:
    """Jobs run at once (in a timer thread) unless their requirements say nowhere; their events go
    to every open stream, after the stream's `after`."""

    def __init__(self):
        self.lock = threading.Condition()
        self.jobs = {}
        self.log = []
        self.cancels = []
        self.looks = 0
        self.streams = 0
        self.submitted = []
        self.running = threading.Event()  # cleared: jobs wait before they run
        self.running.set()

    def _event(self, job, kind, data, message=""):
        with self.lock:
            self.log.append({"jobId": job, "id": len(self.log) + 1, "kind": kind, "data": data, "message": message})
            self.jobs[job]["events"].append(self.log[-1])
            self.lock.notify_all()

    def submit(self, spec, base_dir=None):
        with open(os.path.join(base_dir, CALL_FILE), "rb") as file:
            data = pickle.load(file)
        assert os.path.isfile(os.path.join(base_dir, RUNNER_FILE))
        count = spec.get("array", {}).get("count", 1)
        with self.lock:
            job = str(len(self.jobs) + 1)
            self.jobs[job] = {"id": job, "spec": spec, "state": "pending", "events": [], "results": {}, "tasks": ["pending"] * count}
            self.submitted.append(spec)
        self._event(job, "submitted", {"tasks": count})
        if spec.get("requirements") != NOWHERE:
            threading.Timer(0.01, self._run, (job, data)).start()
        return steward.Job(self, job)

    def _run(self, job, data):
        self.running.wait()
        for task in range(len(self.jobs[job]["tasks"])):
            outcomes = runner.outcomes_of(data, task)
            self.jobs[job]["results"][task] = pickle.dumps({"version": runner.VERSION, "outcomes": outcomes})
            self.jobs[job]["tasks"][task] = "succeeded"
            self._event(job, "attempt.succeeded", {"task": task, "next": {"is": "succeeded"}})
        self.jobs[job]["state"] = "succeeded"
        self._event(job, "state", {"from": "running", "to": "succeeded"})

    def job(self, job_id, tasks=True, events=True):
        with self.lock:
            self.looks += 1
            job = self.jobs[job_id]
            return {
                "id": job_id,
                "state": job["state"],
                "events": list(job["events"]),
                "tasks": [{"index": i, "state": state, "attempts": []} for i, state in enumerate(job["tasks"])],
            }

    def cancel(self, job_id, tasks=None):
        with self.lock:
            self.cancels.append((job_id, tasks))
            job = self.jobs[job_id]
            for task in range(len(job["tasks"])) if tasks is None else tasks:
                if job["tasks"][task] == "pending":
                    job["tasks"][task] = "cancelled"
            ended = all(state != "pending" for state in job["tasks"])
            if ended:
                job["state"] = "cancelled"
        self._event(job_id, "cancel", {"by": "admin"}, "cancel requested by admin")
        if ended:
            self._event(job_id, "state", {"from": "pending", "to": "cancelled"})
        return {}

    def logs(self, job_id, task=0, stream="stdout"):
        return b""

    def _request(self, method, path):
        parts = path.split("/")  # /api/v1/jobs/ID/outputs/TASK/FILE
        assert parts[5] == "outputs" and parts[7] == RESULT_FILE, path
        return Answer(self.jobs[parts[4]]["results"][int(parts[6])])

    def events(self, after=None):
        self.streams += 1
        return FakeStream(self, after or 0)


class FakeStream:
    def __init__(self, client, after):
        self.client = client
        self.next = after
        self.closed = False

    def __iter__(self):
        while True:
            with self.client.lock:
                while not self.closed and len(self.client.log) <= self.next:
                    self.client.lock.wait()
                if self.closed:
                    return
                event = self.client.log[self.next]
                self.next += 1
            yield event

    def close(self):
        with self.client.lock:
            self.closed = True
            self.client.lock.notify_all()


def until(check, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("not in time")
        time.sleep(0.01)


class Executor(unittest.TestCase):
    def setUp(self):
        self.client = FakeClient()
        self.executor = StewardExecutor(self.client)
        self.addCleanup(self.executor.shutdown, wait=False, cancel_futures=True)
        self.nowhere = self.executor.options(requirements=NOWHERE)

    def test_submit_gives_a_future_of_the_calls_value_from_a_job_of_its_own(self):
        future = self.executor.submit(divmod, 17, 5)
        self.assertIsInstance(future, concurrent.futures.Future)
        self.assertEqual(future.result(timeout=5), (3, 2))
        self.assertEqual(future.steward_job, "1")
        spec = self.client.submitted[0]
        self.assertEqual((spec["name"], spec["resources"], "array" in spec), ("divmod", {"cpus": 1}, False))
        with self.assertRaises(ZeroDivisionError):
            self.executor.submit(divmod, 1, 0).result(timeout=5)

    def test_many_futures_are_watched_by_one_stream_not_a_poll_each(self):
        self.client.running.clear()
        futures = [self.executor.submit(pow, 2, n) for n in range(20)]
        until(lambda: all(f.steward_job is not None for f in futures))
        self.client.running.set()
        self.assertEqual([f.result(timeout=10) for f in futures], [2**n for n in range(20)])
        # One stream for all, and one look at a job: the first's, for where the stream starts.
        self.assertEqual((self.client.streams, self.client.looks), (1, 1))

    def test_map_gives_the_results_in_order_from_one_array_job(self):
        self.assertEqual(list(self.executor.map(pow, range(5), [2] * 5, chunksize=2)), [0, 1, 4, 9, 16])
        self.assertEqual(self.client.submitted[0]["array"], {"count": 3})
        self.assertEqual(self.client.submitted[0]["name"], "map pow")
        results = self.executor.map(divmod, [4, 1, 9], [2, 0, 3])
        self.assertEqual(next(results), (2, 0))
        with self.assertRaises(ZeroDivisionError):
            next(results)
        self.assertEqual(list(self.executor.map(abs, [])), [])
        self.assertEqual(len(self.client.submitted), 2)

    def test_cancelling_a_future_cancels_its_job_and_a_map_cancels_a_task_only_when_all_its_calls_are(self):
        future = self.nowhere.submit(abs, 1)
        until(lambda: future.steward_job is not None)
        self.assertTrue(future.cancel())
        until(lambda: self.client.cancels)
        self.assertEqual(self.client.cancels, [("1", None)])
        # A map of 2 tasks of 2 calls: cancelling one call of task 0 leaves it; both of task 1 cancel it.
        rows = self.executor._backend.launch(abs, [[((1,), {}), ((2,), {})], [((3,), {}), ((4,), {})]], self.nowhere._options, "map abs")
        until(lambda: rows[0][0].steward_job is not None)
        rows[0][0].cancel()
        rows[1][0].cancel()
        rows[1][1].cancel()
        until(lambda: len(self.client.cancels) == 2)
        time.sleep(0.1)
        self.assertEqual(self.client.cancels[1:], [("2", [1])])

    def test_a_map_left_early_or_past_its_timeout_cancels_the_calls_not_ended(self):
        results = self.nowhere.map(abs, range(3), timeout=0.2)
        with self.assertRaises(concurrent.futures.TimeoutError):
            next(results)
        until(lambda: self.client.cancels)
        self.assertEqual(self.client.cancels, [("1", None)])

    def test_shutdown_cancelling_futures_cancels_the_queued_jobs_before_it_returns(self):
        futures = [self.nowhere.submit(abs, n) for n in range(3)]
        until(lambda: all(f.steward_job is not None for f in futures))
        done = self.executor.submit(abs, -5)
        self.assertEqual(done.result(timeout=5), 5)
        shutting = threading.Thread(target=self.executor.shutdown, kwargs={"wait": True, "cancel_futures": True})
        shutting.start()
        shutting.join(10)
        self.assertFalse(shutting.is_alive(), "shutdown still waits")
        self.assertTrue(all(f.cancelled() for f in futures))
        self.assertEqual(sorted(self.client.cancels), [("1", None), ("2", None), ("3", None)])
        self.assertEqual(self.client.jobs["4"]["state"], "succeeded")
        with self.assertRaises(RuntimeError):
            self.executor.submit(abs, 1)
        with self.assertRaises(RuntimeError):
            self.nowhere.submit(abs, 1)

    def test_a_job_cancelled_from_outside_gives_a_steward_job_error(self):
        future = self.nowhere.submit(abs, 1)
        until(lambda: future.steward_job is not None)
        self.client.cancel(future.steward_job)
        with self.assertRaises(StewardJobError) as raised:
            future.result(timeout=5)
        error = raised.exception
        self.assertEqual((error.job_id, error.state, error.task), ("1", "cancelled", 0))
        self.assertEqual(str(error), "job 1 cancelled without a result: cancel requested by admin")
        self.assertIsInstance(error, steward.JobFailed)

    def test_a_refused_submit_is_the_futures_error_and_options_are_checked(self):
        def refuse(spec, base_dir=None):
            raise steward.Invalid("resources.cpus: too many", 400, "invalid", "resources.cpus")

        self.client.submit = refuse
        with self.assertRaises(steward.Invalid):
            self.executor.options(cpus=10_000).submit(abs, 1).result(timeout=5)
        with self.assertRaises(TypeError):
            self.executor.options(memory=1)

    def test_the_executor_takes_a_url_and_token_as_the_client_does(self):
        executor = StewardExecutor("http://127.0.0.1:1", token="t", cpus=2)
        self.addCleanup(executor.shutdown)
        self.assertEqual((executor.client.urls, executor.client._http.token), (["http://127.0.0.1:1"], "t"))
        self.assertEqual(executor._options["cpus"], 2)
        self.assertIs(self.executor.options(cpus=3).client, self.client)


if __name__ == "__main__":
    unittest.main()

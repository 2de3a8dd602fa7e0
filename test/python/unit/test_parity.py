"""The pieces of the CLI-parity calls that need no Steward server: telling a workflow file from a
job file, a workflow's input parts, acct's `since`, the errors of a failed job or workflow, the
handles, the wait loop (sync and asyncio) and the event stream's close from another thread."""

import asyncio
import datetime
import http.server
import os
import pickle
import tempfile
import threading
import time
import unittest

import steward
from steward import _api_values, _events, _job_files, _waiting, client

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


class Workflows(unittest.TestCase):
    def test_a_workflow_file_is_one_with_a_top_level_jobs(self):
        cases = [
            (None, "name: x\njobs:\n  a: {command: true}\n", True),
            (None, "jobs :\n  a: {command: true}\n", True),
            (None, '"jobs": {a: {command: true}}\n', True),
            (None, "name: x\ncommand: echo jobs: 3\n", False),
            (None, "command: |\n  jobs: not a key\n", False),
            (None, "command: true\nenv: {jobs: 1}\n", False),
            ({"jobs": {"a": {"command": "true"}}}, None, True),
            ({"command": "true", "env": {"jobs": "1"}}, None, False),
        ]
        for data, text, expected in cases:
            with self.subTest(data=data, text=text):
                self.assertEqual(_job_files._is_workflow(data, text), expected)

    def test_json_text_is_read_as_data(self):
        data, text, _ = _job_files._read_spec('{"jobs": {"a": {"command": "true"}}}', None)
        self.assertEqual((data, text), ({"jobs": {"a": {"command": "true"}}}, None))
        data, text, folder = _job_files._read_spec("jobs:\n  a: {command: true}\n", "/tmp")
        self.assertEqual((data, folder), (None, "/tmp"))

    def test_each_jobs_inputs_are_parts_named_NAME_PATH(self):
        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "a.txt"), "w") as file:
            file.write("a")
        jobs = {"one": {"inputs": ["a.txt"]}, "two": {"inputs": ["a.txt", "../out.txt"]}, "three": {}}
        self.assertEqual(_job_files._workflow_inputs(jobs, folder), [("one/a.txt", "a.txt"), ("two/a.txt", "a.txt")])
        with self.assertRaises(steward.Invalid) as raised:
            _job_files._workflow_inputs({"one": {"inputs": ["a.txt", "gone.txt"]}}, folder)
        self.assertEqual(raised.exception.field, "jobs.one.inputs[1]")
        self.assertTrue(raised.exception.message.startswith("jobs.one.inputs[1]: gone.txt: no such file"))
        make, content_type = _job_files._multipart(b"jobs: {}\n", [("one/a.txt", "a.txt")], folder, field="workflow")
        boundary = content_type.split("boundary=")[1]
        chunks, length = make()
        body = b"".join(chunks)
        self.assertEqual(len(body), length)
        self.assertEqual(
            body.decode(),
            f'--{boundary}\r\nContent-Disposition: form-data; name="workflow"\r\n\r\njobs: {{}}\n\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="one/a.txt"; filename="a.txt"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\na\r\n--{boundary}--\r\n",
        )

    def test_workflow_ids(self):
        for value, expected in [("flow-3", True), ("flow-0", False), ("3", False), ("flow-x", False), (3, False)]:
            with self.subTest(value=value):
                self.assertEqual(_api_values._is_workflow_id(value), expected)


class Since(unittest.TestCase):
    def test_acct_since_as_the_cli_takes_it(self):
        cases = [
            (None, None),
            ("7d", "2026-11-30T12:00:00.000Z"),
            ("12h", "2026-12-07T00:00:00.000Z"),
            ("90m", "2026-12-07T10:30:00.000Z"),
            ("2w", "2026-11-23T12:00:00.000Z"),
            ("45", "2026-12-07T11:59:15.000Z"),
            ("2026-11-01", "2026-11-01T00:00:00.000Z"),
            ("2026-11-01T08:00:00Z", "2026-11-01T08:00:00.000Z"),
            ("2026-11-01T08:00:00.250+01:00", "2026-11-01T07:00:00.250Z"),
            (datetime.timedelta(hours=1), "2026-12-07T11:00:00.000Z"),
            (datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05.000Z"),
        ]
        for since, expected in cases:
            with self.subTest(since=since):
                self.assertEqual(client.since_time(since, NOW), expected)
        for bad in ["yesterday", "2026-13-45T00:00:00", "7 days"]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                client.since_time(bad, NOW)
        with self.assertRaises(TypeError):
            client.since_time(7, NOW)


def task(index, state, exit_code=None, reason=None):
    attempts = [] if exit_code is None and reason is None else [{"exitCode": exit_code, "reason": reason}]
    return {"index": index, "state": state, "attempts": attempts}


class Failures(unittest.TestCase):
    def test_a_failed_job_names_its_failed_tasks(self):
        job = {
            "id": "12",
            "state": "failed",
            "tasks": [task(0, "succeeded", 0), task(1, "failed", 7, "exit code 7"), task(2, "failed", None, "out of memory (512 MB)"),
                      task(3, "failed", 1), task(4, "failed", 1), task(5, "cancelled")],
        }
        error = _waiting.job_failure(job)
        self.assertIs(type(error), steward.JobFailed)
        self.assertEqual((error.job_id, error.state, error.job), ("12", "failed", job))
        self.assertEqual([t["index"] for t in error.failed_tasks], [1, 2, 3, 4])
        self.assertEqual(
            error.message, "job 12 failed: task 1 (exit code 7), task 2 (out of memory (512 MB)), task 3 (exit code 1) and 1 more"
        )

    def test_a_cancelled_job_is_a_JobCancelled(self):
        error = _waiting.job_failure({"id": "3", "state": "cancelled", "tasks": [task(0, "cancelled")]})
        self.assertIsInstance(error, steward.JobCancelled)
        self.assertIsInstance(error, steward.JobFailed)
        self.assertEqual((error.message, error.failed_tasks), ("job 3 cancelled", []))

    def test_a_failed_workflow_names_its_jobs_that_did_not_succeed(self):
        workflow = {
            "workflow": "flow-2",
            "state": "failed",
            "graph": [
                {"name": "a", "job": "4", "state": "succeeded"},
                {"name": "b", "job": "5", "state": "failed"},
                {"name": "c", "job": "6", "state": "cancelled"},
                {"name": "d", "job": "7", "state": None},
            ],
        }
        error = _waiting.workflow_failure(workflow)
        self.assertEqual([job["name"] for job in error.failed_jobs], ["b", "c", "d"])
        self.assertEqual(error.message, "workflow flow-2 failed: b (job 5) failed, c (job 6) cancelled, d (job 7) removed")
        self.assertEqual((error.workflow_id, error.state), ("flow-2", "failed"))


class Handles(unittest.TestCase):
    def test_a_handle_is_its_id(self):
        unused = steward.Client("http://127.0.0.1:9", "t")
        job = steward.Job(unused, "12")
        self.assertEqual((job, job.id, f"{job}", hash(job)), ("12", "12", "12", hash("12")))
        self.assertEqual(pickle.loads(pickle.dumps(job)), "12")
        flow = steward.Workflow(unused, {"workflow": "flow-1", "name": "w", "jobs": {"a": "3"}})
        self.assertEqual((flow, flow.name, flow.jobs), ("flow-1", "w", {"a": "3"}))
        self.assertEqual((flow.id, pickle.loads(pickle.dumps(flow)), flow.client), ("flow-1", "flow-1", unused))
        self.assertIsInstance(flow.jobs["a"], steward.Job)
        self.assertIs(flow.jobs["a"].client, unused)
        self.assertIsInstance(unused.handle("12"), steward.Job)


class Waiting(unittest.TestCase):
    def states(self, *states):
        seen = iter(states)
        return lambda: {"state": next(seen)}

    def test_polls_until_ended_then_finishes(self):
        waiter = _waiting.Waiter("job 1", self.states("pending", "running", "succeeded"), lambda seen: ("done", seen), None, 0.01)
        self.assertEqual(waiter.run(), ("done", {"state": "succeeded"}))

    def test_times_out_with_the_job_as_last_seen(self):
        waiter = _waiting.Waiter("job 1", lambda: {"state": "running"}, lambda seen: seen, 0.05, 0.01)
        with self.assertRaises(steward.WaitTimeout) as raised:
            waiter.run()
        self.assertEqual((raised.exception.job, str(raised.exception)), ({"state": "running"}, "job 1 is still running after 0.05 s"))

    def test_asyncio_polls_in_threads_and_raises_what_finish_raises(self):
        def finish(_seen):
            raise steward.JobFailed("job 1 failed", job_id="1", state="failed")

        waiter = _waiting.Waiter("job 1", self.states("running", "failed"), finish, None, 0.01)
        with self.assertRaises(steward.JobFailed):
            asyncio.run(waiter.run_async())

    def test_an_asyncio_wait_cancelled_stops_polling(self):
        polls = []
        waiter = _waiting.Waiter("job 1", lambda: polls.append(1) or {"state": "running"}, lambda seen: seen, None, 0.01)

        async def main():
            with self.assertRaises(asyncio.TimeoutError):
                await asyncio.wait_for(waiter.run_async(), 0.2)
            count = len(polls)
            await asyncio.sleep(0.1)
            return count

        count = asyncio.run(main())
        self.assertGreater(count, 1)
        self.assertEqual(len(polls), count)


class Silent(http.server.BaseHTTPRequestHandler):
    """An event stream that sends its head and then nothing."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Steward-Api-Version", "1")
        self.end_headers()
        self.wfile.write(b": steward events\n\n")
        self.wfile.flush()
        time.sleep(3)

    def log_message(self, *args):
        pass


class Events(unittest.TestCase):
    def test_close_from_another_thread_frees_a_read_waiting_for_an_event(self):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Silent)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        stream = steward.Client(f"http://127.0.0.1:{server.server_address[1]}", "t").events()
        ended = []
        reader = threading.Thread(target=lambda: ended.append(list(stream)))
        reader.start()
        time.sleep(0.3)
        started = time.monotonic()
        stream.close()
        reader.join(2)
        self.assertFalse(reader.is_alive())
        self.assertEqual(ended, [[]])
        self.assertLess(time.monotonic() - started, 1)

    def test_async_events_cancelled_ends_the_stream(self):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Silent)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        steward_client = steward.Client(f"http://127.0.0.1:{server.server_address[1]}", "t")

        async def main():
            events = steward_client.async_events()
            with self.assertRaises(asyncio.TimeoutError):
                await asyncio.wait_for(events.__anext__(), 0.3)
            return events

        started = time.monotonic()
        events = asyncio.run(main())
        self.assertLess(time.monotonic() - started, 1.5)
        self.assertTrue(events._stream._closed)
        self.assertIsInstance(events, _events.AsyncEventStream)


if __name__ == "__main__":
    unittest.main()

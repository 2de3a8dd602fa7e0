"""steward.futures' watcher: what each job event means for a call, and the thread that reads one
stream for every job (from the first job's first event; events of a job whose submit has not yet
answered kept until it does)."""

import queue
import threading
import time
import unittest

import steward
from steward._futures_watch import Happening, Watcher, claim, happening_of

END = object()


def attempt(kind, task, step, **data):
    return {"jobId": "7", "id": 1, "kind": kind, "data": {"task": task, "next": {"is": step, **data.pop("next", {})}, **data}}


class Meaning(unittest.TestCase):
    def test_what_each_event_means(self):
        cases = [
            ({"jobId": "7", "kind": "state", "data": {"from": "running", "to": "succeeded"}}, Happening("job_ended", "7", state="succeeded")),
            ({"jobId": "7", "kind": "state", "data": {"from": "pending", "to": "running"}}, None),
            ({"jobId": "7", "kind": "state", "data": {"from": "running", "to": "cancelled"}}, Happening("job_ended", "7", state="cancelled")),
            (attempt("attempt.succeeded", 3, "succeeded"), Happening("task_succeeded", "7", 3)),
            (attempt("attempt.failed", 0, "retry", exitCode=1, reason=None), None),
            (attempt("attempt.failed", 0, "failed", exitCode=3, reason=None), Happening("task_ended", "7", 0, "failed", "exit code 3")),
            (
                attempt("attempt.failed", 1, "failed", exitCode=137, reason="out of memory: limit 64 MB reached"),
                Happening("task_ended", "7", 1, "failed", "out of memory: limit 64 MB reached"),
            ),
            (attempt("attempt.cancelled", 2, "cancelled", reason="cancelled by user"), Happening("task_ended", "7", 2, "cancelled", "cancelled by user")),
            (
                attempt("attempt.lost", 0, "poison", reason="host lost", next={"losses": 3}),
                Happening("task_ended", "7", 0, "failed", "host lost; lost 3 times, a poison task"),
            ),
            (attempt("attempt.lost", 0, "restart", reason="host lost"), None),
            (attempt("attempt.succeeded", 0, "lostRace"), None),
            (attempt("attempt.timed_out", 0, "failed", outcome="timed_out", reason=None, exitCode=None), Happening("task_ended", "7", 0, "failed", "timed_out")),
            ({"jobId": "7", "state": "running", "taskCount": 1, "counts": {}}, None),
            ({"jobId": "7", "kind": "attempt.placed", "data": {"task": 0, "attempt": 1, "host": "h"}}, None),
        ]
        for event, expected in cases:
            with self.subTest(event=event):
                self.assertEqual(happening_of(event), expected)

    def test_a_task_is_told_once_and_a_job_end_tells_the_rest(self):
        waiting = {0, 1, 2}
        self.assertEqual(claim(Happening("task_succeeded", "7", 1), waiting), Happening("task_succeeded", "7", 1))
        self.assertIsNone(claim(Happening("task_ended", "7", 1, "failed"), waiting))
        self.assertEqual(claim(Happening("job_ended", "7", state="failed"), waiting).tasks, (0, 2))
        self.assertEqual(waiting, set())
        self.assertIsNone(claim(Happening("job_ended", "7", state="failed"), waiting))


class FakeStream:
    """An event stream fed by the test; close() ends it."""

    def __init__(self, after):
        self.after = after
        self.events = queue.Queue()
        self.closed = False

    def __iter__(self):
        while True:
            event = self.events.get()
            if event is END:
                return
            if isinstance(event, BaseException):
                raise event
            yield event

    def close(self):
        self.closed = True
        self.events.put(END)


class Recorder:
    def __init__(self):
        self.told = []
        self.seen = threading.Event()

    def _note(self, *what):
        self.told.append(what)
        self.seen.set()

    def task_succeeded(self, job, task):
        self._note("succeeded", job, task)

    def task_ended(self, job, task, state, reason):
        self._note("ended", job, task, state, reason)

    def job_ended(self, job, state, tasks):
        self._note("job", job, state, tasks)

    def watch_failed(self, job, tasks, error):
        self._note("lost", job, tasks, type(error).__name__)


def until(check, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("not in time")
        time.sleep(0.01)


class Watching(unittest.TestCase):
    def setUp(self):
        self.handler = Recorder()
        self.streams = []
        self.looked_up = []

        def open_events(after):
            stream = FakeStream(after)
            self.streams.append(stream)
            return stream

        def first_event_id(job):
            self.looked_up.append(job)
            return 41

        self.watcher = Watcher(self.handler, open_events, first_event_id)
        self.addCleanup(self.watcher.stop)

    def send(self, *events, stream=0):
        until(lambda: len(self.streams) > stream)
        for event in events:
            self.streams[stream].events.put(event)

    def test_the_stream_starts_at_the_first_jobs_first_event_and_ends_with_the_last_job(self):
        with self.watcher.submitting() as slot:
            slot.register("7", 2)
        until(lambda: self.streams)
        self.assertEqual((self.looked_up, self.streams[0].after), (["7"], 40))
        self.send(
            {"jobId": "6", "kind": "state", "data": {"to": "succeeded"}},  # not ours
            attempt("attempt.succeeded", 1, "succeeded"),
            {"jobId": "7", "kind": "state", "data": {"to": "failed"}},
        )
        until(lambda: len(self.handler.told) == 2)
        self.assertEqual(self.handler.told, [("succeeded", "7", 1), ("job", "7", "failed", [0])])
        until(lambda: self.watcher._thread is None)
        self.assertTrue(self.streams[0].closed)
        # The next submit starts another stream, from its own job.
        with self.watcher.submitting() as slot:
            slot.register("9", 1)
        until(lambda: len(self.streams) == 2)
        self.assertEqual(self.looked_up, ["7", "9"])

    def test_an_event_of_a_job_whose_submit_has_not_answered_is_kept_until_it_does(self):
        with self.watcher.submitting() as slot:
            slot.register("7", 1)
        gate = self.watcher.submitting()
        second = gate.__enter__()  # a submit in flight: its job 8 is made, its answer not yet in
        self.send({"jobId": "8", "kind": "attempt.succeeded", "id": 50, "data": {"task": 0, "next": {"is": "succeeded"}}})
        self.send({"jobId": "8", "kind": "state", "data": {"to": "succeeded"}})
        self.send(attempt("attempt.failed", 0, "failed", exitCode=2))
        until(lambda: self.handler.told)
        self.assertEqual(self.handler.told, [("ended", "7", 0, "failed", "exit code 2")])
        second.register("8", 1)
        gate.__exit__(None, None, None)
        self.assertEqual(self.handler.told[1:], [("succeeded", "8", 0)])
        self.assertEqual(len(self.streams), 1)
        self.assertEqual(self.watcher._early, {})

    def test_events_of_unknown_jobs_are_dropped_when_no_submit_is_in_flight(self):
        with self.watcher.submitting() as slot:
            slot.register("7", 1)
        self.send({"jobId": "8", "kind": "state", "data": {"to": "succeeded"}})
        self.send(attempt("attempt.succeeded", 0, "succeeded"))
        until(lambda: self.handler.told)
        self.assertEqual(self.watcher._early, {})

    def test_a_second_submit_waits_until_the_first_has_started_the_stream(self):
        first = self.watcher.submitting()
        slot = first.__enter__()
        self.assertTrue(slot.first)
        entered = threading.Event()

        def second():
            with self.watcher.submitting() as other:
                entered.set()
                self.assertFalse(other.first)
                other.register("8", 1)

        thread = threading.Thread(target=second)
        thread.start()
        self.assertFalse(entered.wait(0.2))
        slot.register("7", 1)
        first.__exit__(None, None, None)
        self.assertTrue(entered.wait(5))
        thread.join()

    def test_a_failed_first_submit_lets_the_next_one_start_the_stream(self):
        with self.assertRaises(RuntimeError):
            with self.watcher.submitting():
                raise RuntimeError("the submit was refused")
        with self.watcher.submitting() as slot:
            self.assertTrue(slot.first)
            slot.register("9", 1)
        until(lambda: self.streams)

    def test_a_dropped_stream_is_made_again_from_the_last_event_seen_and_a_refusal_fails_the_jobs(self):
        with self.watcher.submitting() as slot:
            slot.register("7", 1)
            slot.register("8", 2)
        self.send({"jobId": "5", "id": 60, "kind": "state", "data": {"to": "succeeded"}}, steward.Unreachable("gone"))
        until(lambda: len(self.streams) == 2)
        self.assertEqual(self.streams[1].after, 60)
        self.send(steward.Unauthorized("revoked", 401), stream=1)
        until(lambda: len(self.handler.told) == 2)
        self.assertEqual(sorted(self.handler.told), [("lost", "7", [0], "Unauthorized"), ("lost", "8", [0, 1], "Unauthorized")])


if __name__ == "__main__":
    unittest.main()

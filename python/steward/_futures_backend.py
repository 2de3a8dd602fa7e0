"""What a StewardExecutor and its options() views share: the client, the threads that submit jobs
and fetch results, the watcher of the jobs' events, and the futures of each job, task by task.

A call's future stays pending until its job's task has ended (Steward may run it again on another
host meanwhile): so it can be cancelled until then, and cancelling it cancels the Steward task
(the whole job once all its tasks' futures are cancelled)."""

import concurrent.futures
import os
import shutil
import tempfile
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Set
from urllib.parse import quote

from ._futures_payload import (
    CALL_FILE,
    RESULT_FILE,
    RUNNER_FILE,
    Call,
    Outcome,
    outcomes_of_result,
    payload,
    runner_source,
)
from ._futures_spec import job_spec
from ._futures_watch import Watcher
from .errors import Conflict, NotFound, StewardError, StewardJobError

# The end of a failed attempt's standard error that a StewardJobError carries.
STDERR_TAIL = 4096


class Submission:
    """One job of calls: its job file, its payload, and a future for each call, task by task."""

    def __init__(self, spec: Dict[str, Any], data: bytes, futures: List[List[concurrent.futures.Future]]):
        self.spec = spec
        self.data = data
        self.futures = futures
        self.job: Optional[str] = None
        self.cancel_asked: Set[int] = set()


def job_error(job_id: str, task: int, tasks: int, state: str, reason: Optional[str], **more: Any) -> StewardJobError:
    """The error of a call whose task ended without a result: `job 12 cancelled without a result:
    cancelled by admin`, `job 12 task 3 failed without a result: out of memory: limit 512 MB reached`."""
    where = f"job {job_id}" + (f" task {task}" if tasks > 1 else "")
    message = f"{where} {state} without a result" + (f": {reason}" if reason else "")
    return StewardJobError(message, job_id=job_id, state=state, task=task, reason=reason, **more)


def task_reason(task: dict) -> Optional[str]:
    """Why a task (as GET /api/v1/jobs/ID shows it) ended: its last attempt's reason or exit code."""
    attempts = task.get("attempts") or []
    if not attempts:
        return None
    last = attempts[-1]
    if last.get("reason"):
        return last["reason"]
    if last.get("exitCode") is not None:
        return f"exit code {last['exitCode']}"
    return last.get("outcome")


def cancel_reason(job: dict) -> Optional[str]:
    """The job's last cancel event as its history says it (`cancelled by admin`), if any."""
    for event in reversed(job.get("events") or []):
        if event.get("kind") == "cancel":
            return event.get("message") or f"cancelled by {event.get('data', {}).get('by')}"
    return None


def resolve(future: concurrent.futures.Future, outcome: Outcome) -> None:
    """Gives the future its value or exception, unless it was cancelled or already has one."""
    try:
        if not future.set_running_or_notify_cancel():
            return
    except RuntimeError:
        return  # resolved already (a task told twice)
    if outcome.error is not None:
        future.set_exception(outcome.error)
    else:
        future.set_result(outcome.value)


class Backend:
    def __init__(self, client: Any, submitters: int, pickler: Any):
        self.client = client
        self.pickler = pickler
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=submitters, thread_name_prefix="steward-futures")
        self._pool_closed = False
        self._watcher = Watcher(self, lambda after: client.events(after=after), self._first_event_id)
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._jobs: Dict[str, Submission] = {}
        self._outstanding: Set[concurrent.futures.Future] = set()
        self._cancels: Dict[str, Set[int]] = {}
        self._shut = False
        self._joining = False
        # Set in a thread cancelling many futures at once: their cancels go in one flush.
        self._batching = threading.local()
        self._finished = False
        self._folder = tempfile.mkdtemp(prefix="steward-futures-")
        self._runner = runner_source()

    # ---- submitting

    def launch(
        self, function: Callable, chunks: Sequence[Sequence[Call]], options: Dict[str, Any], name: str
    ) -> List[List[concurrent.futures.Future]]:
        """A future for each call, task by task; the job is submitted by a worker thread. Pickling
        happens here: what does not pickle raises at once."""
        data = payload(function, chunks, self.pickler)
        spec = job_spec(options, name, len(chunks))
        futures: List[List[concurrent.futures.Future]] = []
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            for task, chunk in enumerate(chunks):
                row = []
                for _ in chunk:
                    future: concurrent.futures.Future = concurrent.futures.Future()
                    future.steward_job = None  # type: ignore[attr-defined]
                    future.steward_task = task  # type: ignore[attr-defined]
                    self._outstanding.add(future)
                    row.append(future)
                futures.append(row)
            submission = Submission(spec, data, futures)
            self._pool.submit(self._submit, submission)
        for row in futures:
            for future in row:
                future.add_done_callback(self._done)
        return futures

    def _submit(self, submission: Submission) -> None:
        every = [future for row in submission.futures for future in row]
        if all(future.cancelled() for future in every):
            return
        folder = tempfile.mkdtemp(dir=self._folder)
        try:
            with open(os.path.join(folder, RUNNER_FILE), "wb") as file:
                file.write(self._runner)
            with open(os.path.join(folder, CALL_FILE), "wb") as file:
                file.write(submission.data)
            submission.data = b""  # sent from the file: not kept while the job runs
            with self._watcher.submitting() as slot:
                job = str(self.client.submit(submission.spec, base_dir=folder))
                with self._lock:
                    submission.job = job
                    self._jobs[job] = submission
                    for future in every:
                        future.steward_job = job  # type: ignore[attr-defined]
                slot.register(job, len(submission.futures))
        except BaseException as error:
            for future in every:
                resolve(future, Outcome(error=error))
            if not isinstance(error, Exception):
                raise
            return
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        # Futures cancelled while their job was being made: cancel it now.
        asked = [self._ask_cancel(submission, task) for task in range(len(submission.futures))]
        if any(asked):
            self._flush_cancels()
        with self._lock:
            if all(future.done() for future in every):
                self._jobs.pop(job, None)

    def _first_event_id(self, job: str) -> int:
        events = self.client.job(job, tasks=False, events=True).get("events") or []
        return min(event["id"] for event in events) if events else 1

    # ---- the watcher's handler: results and failures

    def task_succeeded(self, job: str, task: int) -> None:
        self._spawn(self._settling, job, [task], self._fetch, job, task)

    def task_ended(self, job: str, task: int, state: str, reason: Optional[str]) -> None:
        self._spawn(self._settling, job, [task], self._fail, job, task, state, reason)

    def job_ended(self, job: str, state: str, tasks: List[int]) -> None:
        self._spawn(self._settling, job, tasks, self._reconcile, job, tasks)

    def _settling(self, job: str, tasks: List[int], work: Callable, *args: Any) -> None:
        """Runs `work`; should it fail (a bug, a result that does not unpickle as expected), the
        tasks' futures get its exception rather than waiting for ever."""
        try:
            work(*args)
        except Exception as error:
            for task in tasks:
                self._settle(job, task, lambda n, e=error: [Outcome(error=e)] * n)

    def watch_failed(self, job: str, tasks: List[int], error: BaseException) -> None:
        for task in tasks:
            self._settle(job, task, lambda count: [Outcome(error=error)] * count)

    def _fetch(self, job: str, task: int) -> None:
        submission = self._submission(job)
        if submission is None or task >= len(submission.futures):
            return
        count = len(submission.futures[task])
        try:
            path = f"/api/v1/jobs/{quote(job, safe='')}/outputs/{task}/{RESULT_FILE}"
            data = self.client._request("GET", path).read()
        except StewardError as error:
            unread = f"its result could not be read: {error}"
            problem = job_error(job, task, len(submission.futures), "succeeded", unread)
            self._settle(job, task, lambda n: [Outcome(error=problem)] * n)
            return
        outcomes = outcomes_of_result(data, count)
        self._settle(job, task, lambda _n: outcomes)

    def _fail(self, job: str, task: int, state: str, reason: Optional[str], info: Optional[dict] = None) -> None:
        submission = self._submission(job)
        if submission is None:
            return
        stderr = None
        if state == "failed":
            try:
                stderr = self.client.logs(job, task=task, stream="stderr")[-STDERR_TAIL:].decode("utf-8", "replace")
            except StewardError:
                stderr = None
        if state == "cancelled" and info is not None:
            reason = cancel_reason(info) or reason
        error = job_error(job, task, len(submission.futures), state, reason, stderr=stderr or None, job=info)
        self._settle(job, task, lambda n: [Outcome(error=error)] * n)

    def _reconcile(self, job: str, tasks: List[int]) -> None:
        """A job ended with tasks not told of by their attempts (cancelled before they ran, say):
        each is looked at as the job now shows it."""
        try:
            info = self.client.job(job)
        except StewardError as error:
            for task in tasks:
                self._settle(job, task, lambda n, e=error: [Outcome(error=e)] * n)
            return
        shown = {each.get("index"): each for each in info.get("tasks") or []}
        for task in tasks:
            seen = shown.get(task) or {}
            if seen.get("state") == "succeeded":
                self._fetch(job, task)
            else:
                self._fail(job, task, seen.get("state") or info.get("state") or "failed", task_reason(seen), info)

    def _settle(self, job: str, task: int, outcomes: Callable[[int], Sequence[Outcome]]) -> None:
        submission = self._submission(job)
        if submission is None or task >= len(submission.futures):
            return
        row = submission.futures[task]
        for future, outcome in zip(row, outcomes(len(row))):
            resolve(future, outcome)

    def _submission(self, job: str) -> Optional[Submission]:
        with self._lock:
            return self._jobs.get(job)

    # ---- futures done, cancelled

    def _done(self, future: concurrent.futures.Future) -> None:
        with self._lock:
            self._outstanding.discard(future)
            job = getattr(future, "steward_job", None)
            submission = self._jobs.get(job) if job is not None else None
            if submission is not None and all(each.done() for row in submission.futures for each in row):
                del self._jobs[job]
            # shutdown(wait=False) left the end to the last future.
            last = self._shut and not self._joining and not self._outstanding
            later = not getattr(self._batching, "active", False)
        if future.cancelled() and submission is not None:
            if self._ask_cancel(submission, future.steward_task) and later:  # type: ignore[attr-defined]
                self._spawn(self._flush_cancels)
        if last:
            self._finish(join=False)

    def _ask_cancel(self, submission: Submission, task: int) -> bool:
        """Notes the task for cancelling when every future of it is cancelled (once)."""
        with self._lock:
            if submission.job is None or task in submission.cancel_asked:
                return False
            if not all(future.cancelled() for future in submission.futures[task]):
                return False
            submission.cancel_asked.add(task)
            self._cancels.setdefault(submission.job, set()).add(task)
            return True

    def _flush_cancels(self) -> None:
        """Cancels the tasks noted: the whole job when all its tasks are, else those tasks. A job
        that has ended meanwhile is left as it is."""
        with self._flushing:
            with self._lock:
                cancels, self._cancels = self._cancels, {}
                counts = {job: len(self._jobs[job].futures) if job in self._jobs else 1 for job in cancels}
            for job, tasks in cancels.items():
                try:
                    if len(tasks) >= counts[job]:
                        self.client.cancel(job)
                    else:
                        self.client.cancel(job, tasks=sorted(tasks))
                except (Conflict, NotFound):
                    pass

    def cancel(self, futures: Sequence[concurrent.futures.Future], wait: bool) -> None:
        """Cancels the futures and then, in one go, their Steward tasks (jobs when whole): before
        returning with `wait`, else in a worker thread."""
        self._batching.active = True
        try:
            for future in futures:
                future.cancel()
        finally:
            self._batching.active = False
        if wait:
            self._flush_cancels()
        else:
            self._spawn(self._flush_cancels)

    def cancel_all(self) -> None:
        """Cancels every future not done, and their Steward tasks; returns once they are asked."""
        with self._lock:
            pending = list(self._outstanding)
        self.cancel(pending, wait=True)

    # ---- the end

    def shutdown(self, wait: bool, cancel_futures: bool) -> None:
        with self._lock:
            self._shut = True
            self._joining = self._joining or wait
        if cancel_futures:
            self.cancel_all()
        with self._lock:
            pending = list(self._outstanding)
        if wait:
            concurrent.futures.wait(pending)
            self._finish(join=True)
        elif not pending:
            self._finish(join=False)

    def _finish(self, join: bool) -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self._pool_closed = True
        self._watcher.stop()
        self._pool.shutdown(wait=join)
        shutil.rmtree(self._folder, ignore_errors=True)

    def _spawn(self, work: Callable, *args: Any) -> None:
        """Runs `work` in a worker thread; in this one once the workers are closed."""
        with self._lock:
            closed = self._pool_closed
        if not closed:
            try:
                self._pool.submit(work, *args)
                return
            except RuntimeError:
                pass  # closed meanwhile
        work(*args)

    @property
    def shut(self) -> bool:
        return self._shut

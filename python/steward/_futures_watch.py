"""One thread that sees every steward.futures job end, from one event stream (GET /api/v1/events):
no poll per future. A task's result is fetched once its attempt succeeded; a task that ended
without one (failed, cancelled) and a job that ended with tasks not yet heard of are told to the
handler too.

The stream starts at the first event of the first job submitted while no stream ran, and other
submits wait until that job is known: every later job's events come after it, so none is missed.
An event of a job whose submit has not yet answered is kept until it does."""

import threading
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Protocol, Set, Tuple

from ._waiting import ENDED
from .errors import Forbidden, StewardError, Unauthorized

# The task's next step, in an attempt's end event, that ends it without a result: the state it ends in.
ENDED_WITHOUT_RESULT = {
    "failed": "failed",
    "poison": "failed",
    "systemFailed": "failed",
    "cancelled": "cancelled",
}
FIRST_PAUSE = 0.5
MAX_PAUSE = 10.0


class Happening(NamedTuple):
    """What an event means for a call: `kind` is task_succeeded (its result can be read),
    task_ended (`state` and `reason`: no result), or job_ended (`state`; once claimed, `tasks`
    names those not told before)."""

    kind: str
    job: str
    task: int = 0
    state: Optional[str] = None
    reason: Optional[str] = None
    tasks: Tuple[int, ...] = ()


def attempt_reason(data: dict) -> Optional[str]:
    """Why an attempt ended, in words: its reason, else its exit code, else its outcome; and why
    its task goes no further when it was lost or failed to start too often."""
    reason = data.get("reason")
    if not reason and data.get("exitCode") is not None:
        reason = f"exit code {data['exitCode']}"
    reason = reason or data.get("outcome")
    following = data.get("next") or {}
    if following.get("is") == "poison":
        reason = f"{reason}; lost {following.get('losses')} times, a poison task"
    elif following.get("is") == "systemFailed":
        reason = f"{reason}; {following.get('systemFailures')} system failures"
    return reason


def happening_of(event: dict) -> Optional[Happening]:
    """What a job event means for a call, or None when nothing ended."""
    kind = event.get("kind") or ""
    data = event.get("data") or {}
    job = event.get("jobId")
    if not isinstance(job, str) or not isinstance(data, dict):
        return None
    if kind == "state":
        return Happening("job_ended", job, state=data.get("to")) if data.get("to") in ENDED else None
    following = data.get("next")
    if not kind.startswith("attempt.") or not isinstance(following, dict) or not isinstance(data.get("task"), int):
        return None
    step = following.get("is")
    if step == "succeeded":
        return Happening("task_succeeded", job, data["task"])
    if step in ENDED_WITHOUT_RESULT:
        return Happening("task_ended", job, data["task"], ENDED_WITHOUT_RESULT[step], attempt_reason(data))
    return None


class Handler(Protocol):
    def task_succeeded(self, job: str, task: int) -> None: ...

    def task_ended(self, job: str, task: int, state: str, reason: Optional[str]) -> None: ...

    def job_ended(self, job: str, state: str, tasks: List[int]) -> None: ...

    def watch_failed(self, job: str, tasks: List[int], error: BaseException) -> None: ...


def claim(happening: Happening, waiting: Set[int]) -> Optional[Happening]:
    """The happening to tell the handler, taking its tasks out of `waiting` (those not yet told):
    None when it tells nothing new (a task told already)."""
    if happening.kind == "job_ended":
        if not waiting:
            return None
        tasks = tuple(sorted(waiting))
        waiting.clear()
        return happening._replace(tasks=tasks)
    if happening.task not in waiting:
        return None
    waiting.discard(happening.task)
    return happening


class Submitting:
    """One submit's place at the gate: register() the job it made."""

    def __init__(self, watcher: "Watcher", first: bool):
        self.watcher = watcher
        self.first = first

    def register(self, job: str, task_count: int) -> None:
        self.watcher._register(job, task_count, self.first)
        self.first = False


class Watcher:
    """The jobs being waited for (each with its tasks not yet told), and the thread reading events."""

    def __init__(
        self,
        handler: Handler,
        open_events: Callable[[int], "object"],
        first_event_id: Callable[[str], int],
    ):
        self._handler = handler
        self._open_events = open_events
        self._first_event_id = first_event_id
        self._lock = threading.Condition()
        self._jobs: Dict[str, Set[int]] = {}
        self._early: Dict[str, List[Happening]] = {}
        self._in_flight = 0
        self._starting = False
        self._thread: Optional[threading.Thread] = None
        self._stream = None
        self._stopping = False

    # ---- submits

    def submitting(self) -> "_Gate":
        return _Gate(self)

    def _enter(self) -> Submitting:
        with self._lock:
            while self._starting:
                self._lock.wait()
            first = self._thread is None
            if first:
                self._starting = True
            self._in_flight += 1
            return Submitting(self, first)

    def _leave(self, slot: Submitting) -> None:
        with self._lock:
            if slot.first:  # its submit failed: the next one starts the stream
                self._starting = False
                self._lock.notify_all()
            self._in_flight -= 1
            if self._in_flight == 0:
                self._early.clear()

    def _register(self, job: str, task_count: int, first: bool) -> None:
        told: List[Happening] = []
        with self._lock:
            waiting = set(range(task_count))
            self._jobs[job] = waiting
            for happening in self._early.pop(job, []):
                claimed = claim(happening, waiting)
                if claimed is not None:
                    told.append(claimed)
            if not waiting:
                del self._jobs[job]
            if first:
                self._stopping = False
                self._thread = threading.Thread(
                    target=self._run, args=(job,), name="steward-futures-watcher", daemon=True
                )
                self._thread.start()
                self._starting = False
                self._lock.notify_all()
        for happening in told:
            self._tell(happening)

    # ---- the thread

    def stop(self) -> None:
        """Ends the thread (its stream closed) and waits for it, unless called from it."""
        with self._lock:
            self._stopping = True
            thread, stream = self._thread, self._stream
        if stream is not None:
            stream.close()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self, first_job: str) -> None:
        pause = FIRST_PAUSE
        last: Optional[int] = None
        while not self._stopping:
            try:
                if last is None:
                    last = self._first_event_id(first_job) - 1
                stream = self._open_events(last)
                with self._lock:
                    self._stream = stream
                    if self._stopping:
                        break
                for event in stream:
                    pause = FIRST_PAUSE
                    if isinstance(event.get("id"), int):
                        last = event["id"]
                    self._see(event)
                    if self._done():
                        return
            except (Unauthorized, Forbidden) as error:
                self._fail_all(error)
                return
            except (StewardError, OSError):
                # The server is away (or refuses a stream for now): made again, from the last event seen.
                if self._stopping:
                    break
                time.sleep(pause)
                pause = min(MAX_PAUSE, pause * 2)
            finally:
                with self._lock:
                    stream, self._stream = self._stream, None
                if stream is not None:
                    stream.close()
        with self._lock:
            if self._thread is threading.current_thread():
                self._thread = None

    def _done(self) -> bool:
        """Whether nothing is left to wait for: then the thread ends (a later submit starts another)."""
        with self._lock:
            if self._stopping or (not self._jobs and self._in_flight == 0 and not self._starting):
                self._thread = None
                return True
            return False

    def _see(self, event: dict) -> None:
        happening = happening_of(event)
        if happening is None:
            return
        with self._lock:
            waiting = self._jobs.get(happening.job)
            if waiting is None:
                if self._in_flight > 0:  # perhaps a job whose submit has not answered yet
                    self._early.setdefault(happening.job, []).append(happening)
                return
            claimed = claim(happening, waiting)
            if not waiting:
                del self._jobs[happening.job]
        if claimed is not None:
            self._tell(claimed)

    def _tell(self, happening: Happening) -> None:
        if happening.kind == "task_succeeded":
            self._handler.task_succeeded(happening.job, happening.task)
        elif happening.kind == "task_ended":
            self._handler.task_ended(happening.job, happening.task, happening.state or "failed", happening.reason)
        else:
            self._handler.job_ended(happening.job, happening.state or "failed", list(happening.tasks))

    def _fail_all(self, error: BaseException) -> None:
        with self._lock:
            jobs, self._jobs = self._jobs, {}
            self._thread = None
        for job, waiting in jobs.items():
            self._handler.watch_failed(job, sorted(waiting), error)


class _Gate:
    """`with watcher.submitting() as slot:` around a submit, `slot.register(job, tasks)` inside."""

    def __init__(self, watcher: Watcher):
        self._watcher = watcher
        self._slot: Optional[Submitting] = None

    def __enter__(self) -> Submitting:
        self._slot = self._watcher._enter()
        return self._slot

    def __exit__(self, *_exc) -> None:
        assert self._slot is not None
        self._watcher._leave(self._slot)

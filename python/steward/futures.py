"""Python calls as Steward jobs, through the standard `concurrent.futures.Executor`:

    from steward.futures import StewardExecutor

    with StewardExecutor(cpus=1, memory_mb=512, time_limit=600) as executor:
        future = executor.submit(pow, 2, 10)       # a concurrent.futures.Future
        print(future.result())                     # 1024
        print(list(executor.map(abs, [-1, -2])))   # [1, 2], one array job
        big = executor.options(cpus=4)             # the same executor, calls of 4 cpus
        big.submit(sum, range(10**8)).result()

Each submit() is a job, each map() an array job (`chunksize` calls a task). The function and its
arguments go by pickle (cloudpickle when it is importable: lambdas and local functions too; else
the standard pickle: functions importable by name on the host). A small runner, sent with each job
as an input, makes the call on the host and sends back the value or the exception. Steward's
retries, migrations and lost hosts apply: a task run again calls again.
"""

import concurrent.futures
import os
import time
from typing import Any, Callable, Iterable, Iterator, List, Optional, Union

from ._futures_backend import Backend
from ._futures_payload import RemoteError, RemoteTraceback, chunks_of, local_pickler
from ._futures_spec import DEFAULTS, call_name, merged_options
from .errors import StewardJobError

__all__ = ["RemoteError", "RemoteTraceback", "StewardExecutor", "StewardJobError"]

# Threads that submit jobs and fetch results, at most, by default.
SUBMITTERS = 8


class StewardExecutor(concurrent.futures.Executor):
    """An Executor whose calls run as Steward jobs.

    `client`: a steward.Client, a server URL (or a list of them, with `token` and `ca` as the
    Client takes them), or None for Client.from_env() (STEWARD_URL, STEWARD_TOKEN, STEWARD_CA).

    What each call takes and how it runs (options() changes them for some calls):
    `cpus` (1), `memory_mb` (MB a task needs; the host's default when None), `gpus`,
    `time_limit` (seconds an attempt may run), `max_attempts` (tries of a task whose runner fails:
    killed, out of memory; an exception of the call is its result, never retried), `requirements`
    (CEL over host facts), `qos`, `priority`, `env` (the job's environment: PYTHONPATH for modules
    the host must import), `python` ("python3", a path or a list of words: the host's
    interpreter), `name` (the job's name; by default the function's), `job` (any other keys of a
    job file, merged over the rest: {"replicas": 2}).

    `submitters`: threads that submit jobs and read results at once (8)."""

    def __init__(
        self,
        client: Any = None,
        token: Optional[str] = None,
        ca: Optional[str] = None,
        *,
        cpus: int = 1,
        memory_mb: Optional[float] = None,
        gpus: Optional[int] = None,
        time_limit: Optional[float] = None,
        max_attempts: Optional[int] = None,
        requirements: Optional[str] = None,
        qos: Optional[str] = None,
        priority: Optional[int] = None,
        env: Optional[dict] = None,
        python: Union[str, List[str]] = "python3",
        name: Optional[str] = None,
        job: Optional[dict] = None,
        submitters: int = SUBMITTERS,
    ):
        from .client import DEFAULT_URL, Client

        if client is None and token is None and ca is None:
            client = Client.from_env()
        elif client is None:
            url = os.environ.get("STEWARD_URL") or DEFAULT_URL
            client = Client(url, token or os.environ.get("STEWARD_TOKEN"), ca=ca or os.environ.get("STEWARD_CA"))
        elif isinstance(client, (str, list, tuple)):
            client = Client(list(client) if not isinstance(client, str) else client, token, ca=ca)
        self._backend = Backend(client, submitters, local_pickler())
        self._options = merged_options(
            DEFAULTS,
            {
                "cpus": cpus,
                "memory_mb": memory_mb,
                "gpus": gpus,
                "time_limit": time_limit,
                "max_attempts": max_attempts,
                "requirements": requirements,
                "qos": qos,
                "priority": priority,
                "env": env,
                "python": python,
                "name": name,
                "job": job,
            },
        )

    @property
    def client(self):
        """The steward.Client the jobs are submitted with."""
        return self._backend.client

    @property
    def pickler(self) -> str:
        """"cloudpickle" or "pickle": how functions and arguments are sent."""
        return self._backend.pickler[0]

    def options(self, **changes: Any) -> "StewardExecutor":
        """This executor with other options for the calls made through it (cpus=4, memory_mb=...,
        time_limit=..., any option of the constructor but `client` and `submitters`). It shares
        this one's client, threads and shutdown: shutting either down shuts both."""
        view = object.__new__(StewardExecutor)
        view._backend = self._backend
        view._options = merged_options(self._options, changes)
        return view

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        """Runs fn(*args, **kwargs) as a Steward job. The future's result() is its value, or
        raises the exception it raised (its remote traceback as __cause__), or StewardJobError
        when the job ended without a result. `future.steward_job` is the job's id once submitted."""
        futures = self._backend.launch(fn, [[(args, kwargs)]], self._options, call_name(fn, mapped=False))
        return futures[0][0]

    def map(
        self, fn: Callable, *iterables: Iterable, timeout: Optional[float] = None, chunksize: int = 1
    ) -> Iterator[Any]:
        """fn over the iterables (read at once), as Executor.map: the results in order, an
        exception raised when its result is reached, `timeout` seconds from this call. One array
        job, each task making `chunksize` calls (one task: a plain job). Leaving the iterator
        early cancels the calls not yet ended."""
        calls = [(tuple(args), {}) for args in zip(*iterables)]
        if not calls:
            return iter(())
        deadline = None if timeout is None else time.monotonic() + timeout
        backend = self._backend
        rows = backend.launch(fn, chunks_of(calls, chunksize), self._options, call_name(fn, mapped=True))
        futures = [future for row in rows for future in row]

        def results() -> Iterator[Any]:
            try:
                futures.reverse()
                while futures:
                    future = futures[-1]
                    if deadline is None:
                        value = future.result()
                    else:
                        value = future.result(max(0.0, deadline - time.monotonic()))
                    futures.pop()
                    yield value
            finally:
                if futures:
                    backend.cancel(futures, wait=False)

        return results()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more calls. `cancel_futures`: every future not done is cancelled, and its Steward
        job (or task) with it, queued or running; this returns once the cancels are sent.
        `wait`: returns once every future is done."""
        self._backend.shutdown(wait, cancel_futures)

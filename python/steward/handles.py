"""Handles on a job and on a workflow: what Client.submit answers, and Client.handle(id).

A handle is its id (a str: "12", "flow-3"), so code that kept the id a submit answered keeps
working; its methods are the client's calls on that id. `wait()` raises for a job that did not
succeed (steward.JobFailed, steward.JobCancelled) or a workflow (steward.WorkflowFailed).
"""

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Union

if TYPE_CHECKING:
    from ._events import AsyncEventStream, EventStream
    from .client import Client

Tasks = Optional[Union[str, Sequence[int]]]


class _Handle(str):
    """An id (a job's, a workflow's) with the client that answers the calls on it."""

    client: "Client"

    def __new__(cls, client: "Client", handle_id: str):
        handle = super().__new__(cls, str(handle_id))
        handle.client = client
        return handle

    @property
    def id(self) -> str:
        return str(self)

    def __reduce__(self):
        # Pickled or copied, a handle is its id (the client holds connections and TLS contexts).
        return (str, (str(self),))


class Job(_Handle):
    """A job: its id, with the client's calls on it."""

    def info(self, tasks: bool = True, events: bool = True) -> dict:
        """The job now (GET /api/v1/jobs/ID), as Client.job."""
        return self.client.job(self, tasks=tasks, events=events)

    @property
    def state(self) -> str:
        """The job's state, asked of the server at each read."""
        return self.client.job(self, tasks=False, events=False)["state"]

    def wait(self, timeout: Optional[float] = None, poll: float = 1.0) -> dict:
        """Waits until the job ends and answers it (with its tasks and events) if it succeeded;
        raises JobFailed (JobCancelled for a cancelled job) carrying its state and failed tasks,
        or WaitTimeout after `timeout` seconds."""
        return self.client.wait(self, timeout=timeout, poll=poll, check=True)

    async def async_wait(self, timeout: Optional[float] = None, poll: float = 1.0) -> dict:
        """wait() for asyncio: the polls run in worker threads; cancelling the task stops it."""
        return await self.client.async_wait(self, timeout=timeout, poll=poll, check=True)

    def events(self, after: Optional[int] = 0, progress: bool = False) -> "EventStream":
        """The job's events, from its first (after=0) unless told, then live; Client.events."""
        return self.client.events(after=after, job=self, progress=progress)

    def async_events(self, after: Optional[int] = 0, progress: bool = False) -> "AsyncEventStream":
        """events() as an async iterator (`async for event in job.async_events(): ...`)."""
        return self.client.async_events(after=after, job=self, progress=progress)

    def logs(self, task: int = 0, follow: bool = False, stream: str = "stdout", attempt: Optional[int] = None, rank: int = 0):
        return self.client.logs(self, task=task, follow=follow, stream=stream, attempt=attempt, rank=rank)

    def fetch(self, dest: str = ".") -> List[str]:
        return self.client.fetch(self, dest)

    def explain(self) -> dict:
        return self.client.explain(self)

    def cancel(self, tasks: Tasks = None) -> dict:
        return self.client.cancel(self, tasks=tasks)

    def retry(self, tasks: Tasks = None, failed: bool = False) -> dict:
        return self.client.retry(self, tasks=tasks, failed=failed)

    def hold(self) -> dict:
        return self.client.hold(self)

    def release(self) -> dict:
        return self.client.release(self)

    def migrate(self, to: Optional[str] = None) -> dict:
        return self.client.migrate(self, to=to)

    def update(self, changes: dict) -> dict:
        return self.client.update(self, changes)

    def remove(self) -> dict:
        return self.client.remove(self)


class Workflow(_Handle):
    """A workflow: its id (flow-N), its name and its jobs by name, with the client's calls on it."""

    name: Optional[str]
    jobs: Dict[str, Job]

    def __new__(cls, client: "Client", created: Dict[str, Any]) -> "Workflow":
        handle = super().__new__(cls, client, created["workflow"])
        handle.name = created.get("name")
        handle.jobs = {name: Job(client, job_id) for name, job_id in (created.get("jobs") or {}).items()}
        return handle

    def info(self) -> dict:
        """The workflow now (GET /api/v1/workflows/ID): state, and its graph with each job's state."""
        return self.client.workflow(self)

    @property
    def state(self) -> str:
        """The workflow's state (from its jobs'), asked of the server at each read."""
        return self.info()["state"]

    def wait(self, timeout: Optional[float] = None, poll: float = 1.0) -> dict:
        """Waits until every job of the workflow has ended and answers the workflow if all
        succeeded; raises WorkflowFailed (its `failed_jobs`), or WaitTimeout."""
        return self.client.wait(self, timeout=timeout, poll=poll, check=True)

    async def async_wait(self, timeout: Optional[float] = None, poll: float = 1.0) -> dict:
        return await self.client.async_wait(self, timeout=timeout, poll=poll, check=True)

    def retry(self) -> dict:
        """Reruns the failed and cancelled jobs (their dependants wait again): {workflow, retried}."""
        return self.client.retry(self)

    def cancel(self) -> dict:
        """Cancels every job of the workflow that has not ended; answers the workflow."""
        return self.client.cancel(self)

"""Waiting for a job or a workflow to end: one poll at a time, so that the same loop runs in a
thread (Client.wait) or in an event loop (Client.async_wait, each poll in a worker thread)."""

import asyncio
import time
from typing import Any, Callable, Optional

from .errors import JobCancelled, JobFailed, WaitTimeout, WorkflowFailed

ENDED = ("succeeded", "failed", "cancelled")
FIRST_PAUSE = 0.1


class Waiter:
    """Polls with `look` (the job or workflow now, as a dict with its `state`) until it has ended,
    then answers `finish(seen)`. The pause between polls grows from 0.1 s to `poll` seconds."""

    def __init__(
        self,
        what: str,
        look: Callable[[], dict],
        finish: Callable[[dict], Any],
        timeout: Optional[float],
        poll: float,
    ):
        self.what = what
        self.look = look
        self.finish = finish
        self.timeout = timeout
        self.poll = poll
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.pause = FIRST_PAUSE

    def step(self):
        """(True, the answer) once ended, or (False, seconds to sleep before the next step);
        raises WaitTimeout past the deadline."""
        seen = self.look()
        if seen["state"] in ENDED:
            return True, self.finish(seen)
        now = time.monotonic()
        if self.deadline is not None and now >= self.deadline:
            raise WaitTimeout(f"{self.what} is still {seen['state']} after {self.timeout:g} s", job=seen)
        pause = self.pause if self.deadline is None else min(self.pause, max(0.0, self.deadline - now))
        self.pause = min(self.poll, self.pause * 1.5)
        return False, pause

    def run(self):
        while True:
            done, value = self.step()
            if done:
                return value
            time.sleep(value)

    async def run_async(self):
        # Each poll is a blocking request: it runs in a worker thread, and the sleep in the loop,
        # so that cancelling the task stops the waiting at once.
        while True:
            done, value = await asyncio.to_thread(self.step)
            if done:
                return value
            await asyncio.sleep(value)


def job_failure(job: dict) -> JobFailed:
    """The error for a job that ended without succeeding (GET /api/v1/jobs/ID with its tasks)."""
    failed = [task for task in job.get("tasks") or [] if task.get("state") == "failed"]
    kind = JobCancelled if job["state"] == "cancelled" else JobFailed
    message = f"job {job['id']} {job['state']}"
    if failed:
        shown = ", ".join(_task_line(task) for task in failed[:3])
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        message += f": {shown}{more}"
    return kind(message, job_id=job["id"], state=job["state"], failed_tasks=failed, job=job)


def _task_line(task: dict) -> str:
    attempts = task.get("attempts") or []
    last = attempts[-1] if attempts else {}
    why = last.get("reason") or (f"exit code {last['exitCode']}" if last.get("exitCode") is not None else None)
    return f"task {task['index']}" + (f" ({why})" if why else "")


def workflow_failure(workflow: dict) -> WorkflowFailed:
    """The error for a workflow whose jobs have all ended and not all succeeded."""
    failed = [job for job in workflow["graph"] if job.get("state") != "succeeded"]
    shown = ", ".join(f"{job['name']} (job {job['job']}) {job.get('state') or 'removed'}" for job in failed)
    return WorkflowFailed(
        f"workflow {workflow['workflow']} {workflow['state']}: {shown}",
        workflow_id=workflow["workflow"],
        state=workflow["state"],
        failed_jobs=failed,
        workflow=workflow,
    )

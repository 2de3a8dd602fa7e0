"""What a call to the Steward API can fail with: one class per kind of answer, all StewardError."""

from typing import Optional


class StewardError(Exception):
    """Any failure of a Steward call. `message` is the API's own line, `code` its error code
    (`invalid`, `not_found`, ...), `field` the field at fault for a 400, `status` the HTTP status."""

    def __init__(
        self,
        message: str,
        status: Optional[int] = None,
        code: Optional[str] = None,
        field: Optional[str] = None,
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field


class Invalid(StewardError):
    """400: a bad job file or request; `field` names what is wrong."""


class Unauthorized(StewardError):
    """401: no token, a wrong one, or one revoked or expired."""


class Forbidden(StewardError):
    """403: the token's role may not do this (a reader's change)."""


class NotFound(StewardError):
    """404: no such job (or another user's), task, file or route."""


class Conflict(StewardError):
    """409: the job's state does not allow it (removing a running job, holding an ended one)."""


class TooLarge(StewardError):
    """413: an input over the server's upload limit, or a job file over 1 MiB."""


class RateLimited(StewardError):
    """429: too many submits from this token; `retry_after` says how many seconds to wait."""

    def __init__(self, message, status=None, code=None, field=None, retry_after=None):
        super().__init__(message, status, code, field)
        self.retry_after = retry_after


class ServerError(StewardError):
    """5xx: the server failed (its log has the details under the request id in the message)."""


class IncompatibleServer(StewardError):
    """The server speaks another version of the API than this client (the message names both)."""


class Unreachable(StewardError):
    """No server in the list answered in time (or the connection broke before the answer)."""


class RedirectRefused(StewardError):
    """A server redirected to a place the token must not go: not one of the servers given, or
    from HTTPS to plain HTTP. Nothing was sent there."""


class WaitTimeout(StewardError, TimeoutError):
    """Client.wait ran out of time; `job` is the job as last seen."""

    def __init__(self, message, job=None):
        super().__init__(message)
        self.job = job


class JobFailed(StewardError):
    """Job.wait (or Client.wait with check=True): the job ended without succeeding. `state` is
    "failed" (or "cancelled": JobCancelled), `job` the job as it ended (with its tasks and
    events), `failed_tasks` its tasks that failed, each {index, state, attempts, ...}, the last
    attempt's `exitCode` and `reason` saying why."""

    def __init__(self, message, job_id=None, state=None, failed_tasks=None, job=None):
        super().__init__(message)
        self.job_id = job_id
        self.state = state
        self.failed_tasks = list(failed_tasks or [])
        self.job = job


class JobCancelled(JobFailed):
    """The job waited for was cancelled (a JobFailed whose `state` is "cancelled")."""


class StewardJobError(JobFailed):
    """steward.futures: a call's job (or its task, for a map) ended without a result: cancelled,
    failed (killed, out of memory, over its time limit, lost more often than Steward retries), or
    its result unreadable. `job_id`, `task`, `state` ("failed", "cancelled"...) and `reason` (the
    last attempt's, when there is one) say which and why; `stderr` is the end of that attempt's
    standard error when it failed, `job` the job as it ended when it was read."""

    def __init__(self, message, job_id=None, state=None, task=0, reason=None, stderr=None, job=None):
        super().__init__(message, job_id=job_id, state=state, job=job)
        self.task = task
        self.reason = reason
        self.stderr = stderr


class WorkflowFailed(StewardError):
    """Workflow.wait: every job of the workflow ended and not all succeeded. `state` is "failed"
    or "cancelled" (the workflow's, from its jobs'), `workflow` the workflow as it ended, and
    `failed_jobs` the entries of its graph that did not succeed, each {name, job, state, ...}."""

    def __init__(self, message, workflow_id=None, state=None, failed_jobs=None, workflow=None):
        super().__init__(message)
        self.workflow_id = workflow_id
        self.state = state
        self.failed_jobs = list(failed_jobs or [])
        self.workflow = workflow


BY_STATUS = {
    400: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    429: RateLimited,
}


def error_for(status: int, body: bytes, retry_after: Optional[str] = None) -> StewardError:
    """The error an answer of this status and body stands for (any body: a proxy's page too)."""
    import json

    message, code, field = f"HTTP {status}", None, None
    try:
        answer = json.loads(body.decode("utf-8"))
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            message = str(error.get("message") or message)
            code = error.get("code")
            field = error.get("field")
    except (ValueError, UnicodeDecodeError):
        pass
    if status == 429:
        seconds = None
        try:
            seconds = float(retry_after) if retry_after is not None else None
        except ValueError:
            pass
        return RateLimited(message, status, code, field, retry_after=seconds)
    kind = BY_STATUS.get(status) or (ServerError if status >= 500 else StewardError)
    return kind(message, status, code, field)

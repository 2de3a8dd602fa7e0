"""A client of Steward's HTTP API (README "The HTTP API"): submit, look, wait, fetch, control, follow.

    import steward
    client = steward.Client.from_env()          # STEWARD_URL, STEWARD_TOKEN, STEWARD_CA
    job = client.submit("examples/python/job.yaml")   # a steward.Job: its id, with its calls
    job.wait(timeout=600)                       # raises steward.JobFailed if it did not succeed
    job.fetch("out/")

Client's submits and dry runs are in _submitting.py, the reading of job and workflow files and
their multipart body in _job_files.py, how values go into paths and queries in _api_values.py.
"""

import datetime
import ipaddress
import json
import os
import posixpath
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union
from urllib.parse import quote, urlencode, urlsplit

# steward.client's names from before its submits, job files and API values had modules of their own.
from ._api_values import AGE, AGE_UNITS, WORKFLOW_ID, since_time  # noqa: F401
from ._api_values import _is_workflow_id, _next_link, _query_value, _segment, _task_list
from ._events import AsyncEventStream, EventStream
from ._http import API_VERSION, API_VERSION_HEADER, RELEASE, RELEASE_HEADER, RETRY_SECONDS, Answer, Transport
from ._job_files import FILE_CHUNK, MAYBE_WORKFLOW, JobSpec  # noqa: F401
from ._many_jobs import batches, job_ids
from ._submitting import Submitting
from ._waiting import ENDED, Waiter, job_failure, workflow_failure  # noqa: F401
from .errors import Conflict, IncompatibleServer, Invalid, StewardError, error_for  # noqa: F401
from .handles import Job, Workflow

DEFAULT_URL = "http://127.0.0.1:4780"
# The server writes a comment every 15 s on an idle event stream: three missed mean it is gone.
EVENT_READ_TIMEOUT = 45.0


def _is_loopback(url: str) -> bool:
    """Whether the URL's host is on this machine's loopback: 127.0.0.0/8, ::1 or localhost."""
    try:
        host = (urlsplit(url.strip()).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _all_loopback(urls: str) -> bool:
    """Whether every URL of a comma-separated list is on the loopback (and there is one)."""
    listed = [url for url in urls.split(",") if url.strip()]
    return bool(listed) and all(_is_loopback(url) for url in listed)


class Client(Submitting):
    """One or more servers (any of them: a standby redirects to its leader) and a bearer token."""

    def __init__(
        self,
        url: Union[str, List[str]] = DEFAULT_URL,
        token: Optional[str] = None,
        ca: Optional[str] = None,
        retry_seconds: float = RETRY_SECONDS,
    ):
        """`retry_seconds`: how long a request keeps trying when no server answers (refused
        connections, a 503 from one restarting) before raising Unreachable: 5 s, as the CLI."""
        urls = url.split(",") if isinstance(url, str) else list(url)
        self._http = Transport(urls, token, ca=ca, retry_seconds=retry_seconds)
        self.urls = self._http.urls

    @classmethod
    def from_env(cls, **options) -> "Client":
        """The client the CLI would be: STEWARD_URL (a comma-separated list: any of these servers,
        default http://127.0.0.1:4780), STEWARD_TOKEN (else the admin token of a `steward up` in
        ./.steward, or $STEWARD_DATA, sent only when every STEWARD_URL is on this machine's loopback), STEWARD_CA (a private authority's certificate)."""
        url = os.environ.get("STEWARD_URL") or DEFAULT_URL
        token = os.environ.get("STEWARD_TOKEN")
        # The local admin token goes to a server on this machine's loopback only, never to a remote one.
        if not token and _all_loopback(url):
            local = os.path.join(os.environ.get("STEWARD_DATA", ".steward"), "admin-token")
            if os.path.isfile(local):
                with open(local, encoding="utf-8") as file:
                    token = file.read().strip()
        return cls(
            url,
            token or None,
            ca=os.environ.get("STEWARD_CA") or None,
            **options,
        )

    # ---- requests

    def _request(self, method: str, path: str, query: Optional[dict] = None, **options) -> Answer:
        if query:
            pairs = [(key, _query_value(value)) for key, value in query.items() if value is not None]
            if pairs:
                path += "?" + urlencode(pairs)
        answer = self._http.request(method, path, **options)
        theirs = (answer.header(API_VERSION_HEADER) or "").strip()
        if theirs and theirs != str(API_VERSION) and answer.status != 400:
            answer.close()
            released = answer.header(RELEASE_HEADER)
            server = f"version {theirs}" + (f" (steward {released})" if released else "")
            raise IncompatibleServer(
                f"the Steward server speaks API {server} and this client speaks API version {API_VERSION}"
                f" (steward {RELEASE}): use a client of the server's release",
                answer.status,
                "api_version",
            )
        if 200 <= answer.status < 300:
            return answer
        body = answer.read()
        raise error_for(answer.status, body, answer.header("Retry-After"))

    def _json(self, method: str, path: str, query: Optional[dict] = None, payload: Any = None, **options) -> Any:
        if payload is not None:
            options["body"] = json.dumps(payload).encode("utf-8")
            options["headers"] = {"Content-Type": "application/json", **options.get("headers", {})}
        return json.loads(self._request(method, path, query, **options).read().decode("utf-8"))

    def job(self, job_id: str, tasks: bool = True, events: bool = True) -> dict:
        """The job (GET /api/v1/jobs/ID): state, counts, spec, and its tasks and events unless left out."""
        return self._json("GET", f"/api/v1/jobs/{_segment(job_id)}", {"tasks": tasks, "events": events})

    def handle(self, job_id: str) -> Union[Job, Workflow]:
        """A handle on a job (steward.Job) or, for a flow-N id, a workflow (steward.Workflow, its
        jobs read from the server). Nothing is asked of the server for a job's handle."""
        if _is_workflow_id(job_id):
            return Workflow(self, self.workflow(job_id))
        return Job(self, job_id)

    def workflow(self, workflow_id: str) -> dict:
        """The workflow (GET /api/v1/workflows/ID), as `steward show flow-N`: {workflow, name,
        jobs: {NAME: ID}, owner, createdAt, state, graph: [{name, job, state, taskCount, counts,
        endedAt, dependsOn}]}, each job after those it waits for."""
        return self._json("GET", f"/api/v1/workflows/{_segment(workflow_id)}")

    def wait(self, job_id: str, timeout: Optional[float] = None, poll: float = 1.0, check: bool = False) -> dict:
        """Waits until the job has ended (succeeded, failed or cancelled) and answers it, with its
        tasks and events; a workflow's id (flow-N) waits for all its jobs and answers the
        workflow. Raises WaitTimeout after `timeout` seconds. With `check` (what Job.wait does),
        a job that did not succeed raises JobFailed (JobCancelled), a workflow WorkflowFailed."""
        return self._waiter(job_id, timeout, poll, check).run()

    async def async_wait(
        self, job_id: str, timeout: Optional[float] = None, poll: float = 1.0, check: bool = False
    ) -> dict:
        """wait() for asyncio: each poll runs in a worker thread (asyncio.to_thread), the pauses
        in the event loop; cancelling the task stops the waiting."""
        return await self._waiter(job_id, timeout, poll, check).run_async()

    def _waiter(self, job_id: str, timeout: Optional[float], poll: float, check: bool) -> Waiter:
        if _is_workflow_id(job_id):

            def finish_workflow(seen: dict) -> dict:
                if check and seen["state"] != "succeeded":
                    raise workflow_failure(seen)
                return seen

            return Waiter(f"workflow {job_id}", lambda: self.workflow(job_id), finish_workflow, timeout, poll)

        def finish_job(_seen: dict) -> dict:
            job = self.job(job_id)
            if check and job["state"] != "succeeded":
                raise job_failure(job)
            return job

        look = lambda: self.job(job_id, tasks=False, events=False)  # noqa: E731
        return Waiter(f"job {job_id}", look, finish_job, timeout, poll)

    def jobs(
        self,
        all: bool = False,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        state: Optional[str] = None,
        user: Optional[str] = None,
    ) -> Iterator[dict]:
        """The jobs in id order (not ended ones, unless `all` or an ended `state`), as summaries.
        With `limit`, they are read `limit` at a time, page after page by the Link header's next."""
        query = {"all": all or None, "state": state, "user": user, "limit": limit, "after": after}
        path = "/api/v1/jobs?" + urlencode([(k, _query_value(v)) for k, v in query.items() if v is not None])
        while path:
            answer = self._request("GET", path)
            following = _next_link(answer.header("Link"))
            for summary in json.loads(answer.read().decode("utf-8")):
                yield summary
            path = following if limit is not None else None

    def cancel(self, job_id: str, tasks: Optional[Union[str, Sequence[int]]] = None) -> dict:
        """Cancels the job (or only `tasks`: "3,7-9" or a list of indexes): pending tasks never
        start, running attempts are stopped. A workflow's id (flow-N) cancels every job of it
        that has not ended, in one step (POST /api/v1/workflows/ID/cancel, as `steward cancel
        flow-N`), and answers the workflow."""
        if _is_workflow_id(job_id):
            if tasks is not None:
                raise ValueError("tasks= names a job's tasks: a workflow's cancel takes none")
            self._json("POST", f"/api/v1/workflows/{_segment(job_id)}/cancel", payload={})
            return self.workflow(job_id)
        return self._control(job_id, "cancel", {"tasks": _task_list(tasks)} if tasks is not None else {})

    def job_states(self, ids: Union[str, Iterable[str]]) -> Dict[str, Optional[str]]:
        """Each job's state by its id, in the order named (GET /api/v1/jobs/states, as `steward
        status ID...`): None for an id that names no job (never made, removed, or, for a user's
        token, another user's). One request per 1000 ids; none for no ids."""
        states: Dict[str, Optional[str]] = {}
        for run in batches(job_ids(ids)):
            answer = self._json("GET", "/api/v1/jobs/states", {"ids": ",".join(run)})
            states.update((job["id"], job["state"]) for job in answer["jobs"])
        return states

    def cancel_jobs(self, ids: Union[str, Iterable[str]]) -> Dict[str, Optional[str]]:
        """Cancels each job of `ids` as cancel() does, in one request per 1000 ids (POST
        /api/v1/jobs/cancel, as `steward cancel ID ID...`): a job that has ended is left as it is,
        another user's left alone. Answers each job's state by its id once the cancels are durable,
        as job_states() does (a job whose running attempts are still stopping reads "running").
        Sent again when an answer is lost: a cancel repeated changes nothing."""
        states: Dict[str, Optional[str]] = {}
        for run in batches(job_ids(ids)):
            answer = self._json("POST", "/api/v1/jobs/cancel", payload={"ids": run}, idempotent=True)
            states.update((job["id"], job["state"]) for job in answer["jobs"])
        return states

    def retry(
        self, job_id: str, tasks: Optional[Union[str, Sequence[int]]] = None, failed: bool = False
    ) -> dict:
        """Gives failed or cancelled tasks new attempts with a fresh retry budget (from their
        checkpoint if they have one): every such task, only `tasks` ("3,7-9" or a list), or with
        `failed=True` only the failed ones. The answer is the job, with `retried` and `skipped`.
        A workflow's id (flow-N) reruns its failed and cancelled jobs in one step (their
        dependants wait again; what succeeded is kept) and answers {workflow, retried: [{name,
        job, tasks}]}."""
        if _is_workflow_id(job_id):
            if tasks is not None or failed:
                raise ValueError("tasks= and failed= name a job's tasks: a workflow's retry takes neither")
            return self._json("POST", f"/api/v1/workflows/{_segment(job_id)}/retry", payload={})
        payload: dict = {}
        if tasks is not None:
            payload["tasks"] = _task_list(tasks)
        if failed:
            payload["failed"] = True
        return self._control(job_id, "retry", payload)

    def update(self, job_id: str, changes: dict) -> dict:
        """Changes a job that has not started, as a merge of `changes` into its job file (for
        example {"priority": 5, "requirements": 'host.name == "a"', "resources": {"memoryMb": 512}};
        None removes requirements, rank or the time limit), checked as a submit is. A running
        job is refused (steward.Conflict)."""
        return self._json("PATCH", f"/api/v1/jobs/{_segment(job_id)}", payload=changes)

    def hold(self, job_id: str) -> dict:
        """Holds the job: it does not start; running attempts stop, with their checkpoints."""
        return self._control(job_id, "hold")

    def release(self, job_id: str) -> dict:
        """Releases a held job."""
        return self._control(job_id, "release")

    def migrate(self, job_id: str, to: Optional[str] = None) -> dict:
        """Moves a running job to another host (or the one named), resuming from its checkpoint."""
        return self._control(job_id, "migrate", {"to": to} if to else {})

    def remove(self, job_id: str) -> dict:
        """Removes an ended job with its files and checkpoints."""
        return self._json("DELETE", f"/api/v1/jobs/{_segment(job_id)}")

    def _control(self, job_id: str, action: str, payload: Optional[dict] = None) -> dict:
        return self._json("POST", f"/api/v1/jobs/{_segment(job_id)}/{action}", payload=payload or {})

    def shares(self) -> dict:
        """The fair-share tree: {at, halfLifeSeconds, lines}, a line for each account and user with
        its shares, decayed usage and factor (a user sees their own line and the accounts above it)."""
        return self._json("GET", "/api/v1/shares")

    def explain(self, job_id: str) -> dict:
        """Why the job waits, or where it could run (GET /api/v1/jobs/ID/explain, `steward
        explain`): {id, state, summary, hosts: [...], requirements clause by clause, pools, ...}."""
        return self._json("GET", f"/api/v1/jobs/{_segment(job_id)}/explain")

    def acct(
        self,
        user: Optional[str] = None,
        since: Union[None, str, datetime.datetime, datetime.timedelta] = "7d",
        limit: Optional[int] = None,
    ) -> List[dict]:
        """Ended attempts with what they used, oldest end first (GET /api/v1/accounting, `steward
        acct`): each {job, task, attempt, owner, host, outcome, exitCode, usage: {userSeconds,
        systemSeconds, peakMemoryMb, wallSeconds, signal}, startedAt, endedAt, ...}. `since` is an
        age as the CLI takes it ("7d", the CLI's default; "12h", "2w"), a date or time
        ("2026-11-01", "2026-11-01T08:00:00Z"), a datetime, a timedelta (that long ago), or None
        for every attempt kept. A user's token sees its own attempts whatever `user` says."""
        query = {"user": user, "since": since_time(since, datetime.datetime.now(datetime.timezone.utc)), "limit": limit}
        return self._json("GET", "/api/v1/accounting", query)

    accounting = acct

    def whoami(self) -> dict:
        """The token's user and role (GET /api/v1/whoami): {user, role, tokenId, expiresAt,
        group, qos}."""
        return self._json("GET", "/api/v1/whoami")

    def qos(self) -> Optional[List[str]]:
        """The QoS tiers this token's jobs may ask for (`qos:` in a job file), from whoami; None
        for an admin's token, which may use any tier of the server's QoS file."""
        return self.whoami()["qos"]

    # ---- secrets

    def set_secret(self, name: str, value: dict) -> dict:
        """Sets one of your secrets (PUT /api/v1/secrets/NAME): S3 credentials your jobs name by
        `credentials` on an s3: input or output; `value` holds accessKeyId and secretAccessKey,
        and may hold sessionToken, region and endpoint. Answers {name, createdAt, updatedAt},
        never the value."""
        return self._json("PUT", f"/api/v1/secrets/{quote(name, safe='')}", payload=value)

    def secrets(self) -> List[dict]:
        """Your secrets by name with when each was set (GET /api/v1/secrets), never their values."""
        return self._json("GET", "/api/v1/secrets")

    def remove_secret(self, name: str) -> dict:
        """Removes one of your secrets (DELETE /api/v1/secrets/NAME); NotFound when there is none."""
        return self._json("DELETE", f"/api/v1/secrets/{quote(name, safe='')}")

    def hosts(self) -> List[dict]:
        """The hosts with their state, slots and facts."""
        return self._json("GET", "/api/v1/hosts")

    # ---- files

    def logs(
        self,
        job_id: str,
        task: int = 0,
        follow: bool = False,
        stream: str = "stdout",
        attempt: Optional[int] = None,
        rank: int = 0,
    ) -> Union[bytes, Iterator[bytes]]:
        """The output of the task's latest attempt (or the one named): bytes, or with `follow` an
        iterator of chunks as the attempt writes them, until it ends."""
        query = {"task": task, "stream": stream, "attempt": attempt, "rank": rank, "follow": follow or None}
        path = f"/api/v1/jobs/{_segment(job_id)}/logs"
        if not follow:
            return self._request("GET", path, query).read()
        # A followed log answers only when the job writes: no time limit on reading it.
        return self._request("GET", path, query, read_timeout=None, answer_timeout=None).chunks()

    def fetch(self, job_id: str, dest: str = ".") -> List[str]:
        """Writes the job's output files as DEST/PATH, or DEST/TASK/PATH for an array (as
        `steward fetch`), and answers the paths written."""
        job = self.job(job_id, tasks=False, events=False)
        files = self._json("GET", f"/api/v1/jobs/{_segment(job_id)}/outputs")
        root = os.path.abspath(dest)
        written = []
        for file in files:
            relative = posixpath.normpath(file["path"])
            if relative.startswith("/") or relative == ".." or relative.startswith("../"):
                raise StewardError(f"refusing to write outside {root}: {file['path']}")
            parts = ([str(file["task"])] if job["taskCount"] > 1 else []) + relative.split("/")
            target = os.path.join(root, *parts)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            encoded = "/".join(quote(part, safe="") for part in file["path"].split("/"))
            answer = self._request("GET", f"/api/v1/jobs/{_segment(job_id)}/outputs/{file['task']}/{encoded}")
            temporary = f"{target}.{os.getpid()}.part"
            with open(temporary, "wb") as out:
                for chunk in answer.chunks():
                    out.write(chunk)
            os.replace(temporary, target)
            written.append(target)
        return written

    # ---- events

    def events(
        self, after: Optional[int] = None, job: Optional[str] = None, progress: bool = False
    ) -> EventStream:
        """The job events as they are committed (GET /api/v1/events), each a dict {jobId, id, at,
        kind, data, message}. With `after`, the stored events after that id come first (0: all of
        them). A dropped connection is made again with Last-Event-ID (for up to 30 s), so no event
        is missed or repeated. With `progress`, a job's task counts come too, as {jobId, state,
        taskCount, counts} with counts {pending, waiting, held, running, succeeded, failed,
        cancelled} (no `kind`; not stored: none is replayed). close() ends the stream."""

        def open_stream(last: Optional[int]) -> Answer:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            return self._request(
                "GET", "/api/v1/events", {"job": job}, headers=headers, read_timeout=EVENT_READ_TIMEOUT
            )

        return EventStream(open_stream, after, progress)

    def async_events(
        self, after: Optional[int] = None, job: Optional[str] = None, progress: bool = False
    ) -> AsyncEventStream:
        """events() as an async iterator: `async for event in client.async_events(...)`. Each read
        runs in a worker thread; a cancelled task, aclose() or leaving `async with` ends it."""
        return AsyncEventStream(self.events(after=after, job=job, progress=progress))

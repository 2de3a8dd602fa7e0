"""A client of Steward's HTTP API (README "The HTTP API"): submit, look, wait, fetch, control, follow.

    import steward
    client = steward.Client.from_env()          # STEWARD_URL, STEWARD_TOKEN, STEWARD_CA
    job = client.submit("examples/python/job.yaml")   # a steward.Job: its id, with its calls
    job.wait(timeout=600)                       # raises steward.JobFailed if it did not succeed
    job.fetch("out/")
"""

import datetime
import ipaddress
import json
import os
import posixpath
import re
import uuid
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlencode, urlsplit

from ._events import AsyncEventStream, EventStream, _server_sent_events  # noqa: F401 (tests)
from ._many_jobs import batches, job_ids
from ._http import API_VERSION, API_VERSION_HEADER, RELEASE, RELEASE_HEADER, RETRY_SECONDS, Answer, Transport
from ._waiting import ENDED, Waiter, job_failure, workflow_failure
from .errors import Conflict, IncompatibleServer, Invalid, StewardError, error_for
from .handles import Job, Workflow

DEFAULT_URL = "http://127.0.0.1:4780"
# A workflow's id, as the server gives it (model/workflow-id.ts).
WORKFLOW_ID = re.compile(r"^flow-[1-9][0-9]*$")
# A top-level `jobs:` makes a YAML file a workflow file (a job file has no such key); as the CLI
# tells them apart (src/cli/job-submission.ts), without parsing the YAML.
MAYBE_WORKFLOW = re.compile(r"""^(jobs|"jobs"|'jobs')[ \t]*:""", re.MULTILINE)
# An age for acct's `since`, as `steward acct --since` takes it: 7d, 12h, 90m, 2w, 30s, 45.
AGE = re.compile(r"^(\d+)\s*([smhdw]?)$")
AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# The server writes a comment every 15 s on an idle event stream: three missed mean it is gone.
EVENT_READ_TIMEOUT = 45.0
FILE_CHUNK = 1 << 16

JobSpec = Union[Dict[str, Any], str, "os.PathLike[str]"]


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


class Client:
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

    # ---- jobs

    def submit(
        self,
        spec: JobSpec,
        base_dir: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Union[Job, Workflow]:
        """Submits a job, or a workflow, and answers its handle once it is durable: a steward.Job
        (a str, the job's id) or, for a workflow file (a top-level `jobs:`), a steward.Workflow
        (a str, its flow-N id). `spec` is a dict, a file's text (YAML or JSON), or a file's path
        (.yaml, .yml, .json). Its inputs are uploaded from `base_dir`: by default the file's
        folder, or the current folder for a dict or text.

        The submit carries an Idempotency-Key (a fresh one unless given), so a submit whose answer
        was lost is sent again, to the next server too, without making a second job."""
        data, text, folder = _read_spec(spec, base_dir)
        key = idempotency_key or uuid.uuid4().hex
        if _is_workflow(data, text):
            return self._submit_workflow(data, text, folder, key)
        try:
            return Job(self, self._submit_job(data, text, folder, key))
        except Invalid as error:
            # A workflow file this client did not tell (a flow-style `{jobs: ...}`): the server
            # names it so, and made nothing.
            if not _is_workflow_refusal(error):
                raise
            return self._submit_workflow(data, text, folder, key)

    def submit_workflow(
        self,
        spec: JobSpec,
        base_dir: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Workflow:
        """Submits a workflow file (`jobs: {NAME: job file}`, each job's dependsOn naming others
        by NAME): every job is made at once, or none. `spec` as for submit; each job's inputs are
        uploaded from `base_dir` (by default the file's folder). Answers a steward.Workflow."""
        data, text, folder = _read_spec(spec, base_dir)
        return self._submit_workflow(data, text, folder, idempotency_key or uuid.uuid4().hex)

    def _submit_job(self, data: Optional[dict], text: Optional[str], folder: str, key: str) -> str:
        created = self._post_file(
            "/api/v1/jobs",
            "job",
            data,
            text,
            folder,
            key,
            lambda given: _inputs_to_send(given.get("inputs"), folder),
            lambda checked: _inputs_to_send(checked["spec"].get("inputs"), folder),
        )
        return created["id"]

    def _submit_workflow(self, data: Optional[dict], text: Optional[str], folder: str, key: str) -> Workflow:
        created = self._post_file(
            "/api/v1/workflows",
            "workflow",
            data,
            text,
            folder,
            key,
            lambda given: _workflow_inputs(given.get("jobs"), folder),
            lambda checked: _workflow_inputs(_checked_jobs(checked), folder),
        )
        return Workflow(self, created)

    def _post_file(
        self,
        route: str,
        field: str,
        data: Optional[dict],
        text: Optional[str],
        folder: str,
        key: str,
        inputs_of: Callable[[dict], Sequence[Union[str, Tuple[str, str]]]],
        checked_inputs_of: Callable[[dict], Sequence[Union[str, Tuple[str, str]]]],
    ) -> dict:
        """Sends a job or workflow file to `route`: as JSON when it names no inputs, else as the
        multipart `field` with its inputs. No YAML parser here: a YAML file that may name inputs is
        read by the server first (a dry run, which makes nothing) to learn them; one that names none
        goes as its text. `inputs_of(data)` and `checked_inputs_of(dry run's answer)` name them."""
        headers = {"Idempotency-Key": key}
        if data is not None:
            inputs = inputs_of(data)
            if not inputs:
                return self._json("POST", route, payload=data, headers=headers, idempotent=True)
            file_field = json.dumps(data).encode("utf-8")
        else:
            assert text is not None
            file_field = text.encode("utf-8")
            yaml_headers = {"Content-Type": "application/yaml"}
            inputs: Sequence[Union[str, Tuple[str, str]]] = []
            if "inputs" in text:
                checked = self._json("POST", route, {"dryRun": True}, body=file_field, headers=yaml_headers, idempotent=True)
                inputs = checked_inputs_of(checked)
            if not inputs:
                return self._json("POST", route, body=file_field, headers={**yaml_headers, **headers}, idempotent=True)
        body, content_type = _multipart(file_field, inputs, folder, field=field)
        return self._json("POST", route, body=body, headers={"Content-Type": content_type, **headers}, idempotent=True)

    def dry_run(self, spec: JobSpec, base_dir: Optional[str] = None, explain: bool = True) -> dict:
        """Checks a job file as a submit does (the same steward.Invalid naming the field, its
        inputs looked for in `base_dir`) and makes nothing, as `steward submit --dry-run`:
        answers {spec, explanation}, the job file as the server reads it (defaults filled in)
        and what explain() would say of the job submitted now (without `explain`: {spec}).
        A workflow file answers {name, jobs: [{name, dependsOn, spec, explanation}]}, each job's
        file as read, in the order a submit makes them, and what explain() would say of each
        submitted now once what it waits for is done (without `explain`: no explanation)."""
        data, text, folder = _read_spec(spec, base_dir)
        query = {"dryRun": True, "explain": explain or None}
        if data is not None:
            body, headers = json.dumps(data).encode("utf-8"), {"Content-Type": "application/json"}
        else:
            assert text is not None
            body, headers = text.encode("utf-8"), {"Content-Type": "application/yaml"}
        workflow = _is_workflow(data, text)
        if not workflow:
            try:
                checked = self._json("POST", "/api/v1/jobs", query, body=body, headers=headers, idempotent=True)
            except Invalid as error:
                if not _is_workflow_refusal(error):
                    raise
                workflow = True
            else:
                _inputs_to_send(checked["spec"].get("inputs"), folder)
                return checked
        checked = self._json("POST", "/api/v1/workflows", query, body=body, headers=headers, idempotent=True)
        _workflow_inputs(_checked_jobs(checked), folder)
        return checked

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


def since_time(
    since: Union[None, str, datetime.datetime, datetime.timedelta], now: datetime.datetime
) -> Optional[str]:
    """acct's `since` as the ISO time the API takes (UTC, with Z), or None for no bound."""
    if since is None:
        return None
    if isinstance(since, datetime.timedelta):
        at = now - since
    elif isinstance(since, datetime.datetime):
        at = since if since.tzinfo else since.astimezone()
    elif isinstance(since, str):
        text = since.strip()
        age = AGE.match(text)
        if age:
            at = now - datetime.timedelta(seconds=int(age.group(1)) * AGE_UNITS[age.group(2)])
        elif re.match(r"^\d{4}-\d{2}-\d{2}$", text):
            at = datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)
        elif re.match(r"^\d{4}-\d{2}-\d{2}[T ]", text):
            try:
                at = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
            except ValueError:
                raise ValueError(f"since={since!r}: not a date or time") from None
            if at.tzinfo is None:
                at = at.astimezone()
        else:
            raise ValueError(f"since={since!r}: an age such as 7d, 12h or 2w, or a date such as 2026-11-01")
    else:
        raise TypeError("since is an age or date (str), a datetime, a timedelta or None")
    utc = at.astimezone(datetime.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _next_link(header: Optional[str]) -> Optional[str]:
    """The target of a Link header's rel="next", or None."""
    if not header:
        return None
    for part in header.split(","):
        target, _, params = part.partition(";")
        target = target.strip()
        if target.startswith("<") and target.endswith(">") and 'rel="next"' in params.replace(" ", ""):
            return target[1:-1]
    return None


def _query_value(value: Any) -> str:
    if value is True:
        return "1"
    if value is False:
        return "0"
    return str(value)


def _task_list(tasks: Union[str, Sequence[int]]) -> str:
    """A task list as the API takes it: "3,7-9" as given, or indexes joined ("3,7,8,9")."""
    if isinstance(tasks, str):
        return tasks
    return ",".join(str(int(index)) for index in tasks)


def _segment(value: Any) -> str:
    return quote(str(value), safe="")


def _is_workflow_id(value: Any) -> bool:
    return isinstance(value, str) and WORKFLOW_ID.match(str(value)) is not None


def _read_spec(spec: JobSpec, base_dir: Optional[str]) -> Tuple[Optional[dict], Optional[str], str]:
    """(data, text, folder): a dict as it is, or a file's (or the given) text, parsed when it is
    JSON; and the folder its inputs are read from."""
    text: Optional[str] = None
    data: Optional[dict] = None
    if isinstance(spec, dict):
        data = spec
    elif isinstance(spec, os.PathLike) or _looks_like_path(spec):
        path = os.fspath(spec)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no such job file: {path}")
        with open(path, encoding="utf-8") as file:
            text = file.read()
        if base_dir is None:
            base_dir = os.path.dirname(os.path.abspath(path))
    elif isinstance(spec, str):
        text = spec
    else:
        raise TypeError("submit takes a dict, a job file's text or a job file's path")
    if text is not None:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            data = parsed
    return data, (None if data is not None else text), os.path.abspath(base_dir or os.getcwd())


def _is_workflow(data: Optional[dict], text: Optional[str]) -> bool:
    """A workflow file rather than a job file: a mapping with a top-level `jobs`."""
    if data is not None:
        return "jobs" in data
    return text is not None and MAYBE_WORKFLOW.search(text) is not None


def _is_workflow_refusal(error: Invalid) -> bool:
    """The job route's 400 for a workflow file sent as a job."""
    return error.field == "jobs" and "workflow file" in error.message


def _checked_jobs(checked: dict) -> Dict[str, Any]:
    """A workflow dry run's jobs ([{name, spec, ...}], in the order a submit makes them) by name."""
    return {each["name"]: each["spec"] for each in checked.get("jobs") or [] if isinstance(each, dict)}


def _workflow_inputs(jobs: Any, folder: str) -> List[Tuple[str, str]]:
    """Each job's inputs to upload, as (part name NAME/PATH, path), checked to exist in `folder`;
    a missing one is refused naming jobs.NAME.inputs[i]."""
    found: List[Tuple[str, str]] = []
    if not isinstance(jobs, dict):
        return found
    for name, each in jobs.items():
        if not isinstance(each, dict):
            continue
        try:
            paths = _inputs_to_send(each.get("inputs"), folder)
        except Invalid as error:
            field = f"jobs.{name}.{error.field}"
            raise Invalid(f"jobs.{name}.{error.message}", field=field) from None
        found.extend((f"{name}/{path}", path) for path in paths)
    return found


def _looks_like_path(spec: Any) -> bool:
    """A string that names a job file rather than holding one: one line, a job file's suffix or an
    existing file."""
    if not isinstance(spec, str) or "\n" in spec:
        return False
    return spec.endswith((".yaml", ".yml", ".json")) or os.path.isfile(spec)


def _inputs_to_send(inputs: Any, folder: str) -> List[str]:
    """The job's inputs to upload, checked to exist in `folder`. A path that leaves the folder is
    left to the server, which refuses it naming the field (as the CLI does)."""
    if not isinstance(inputs, list):
        return []
    found = []
    for index, path in enumerate(inputs):
        if not isinstance(path, str) or not _stays_inside(path):
            continue
        if not os.path.isfile(os.path.join(folder, path)):
            raise Invalid(f"inputs[{index}]: {path}: no such file in {folder}", field=f"inputs[{index}]")
        found.append(path)
    return found


def _stays_inside(path: str) -> bool:
    normal = posixpath.normpath(path)
    return not posixpath.isabs(path) and normal != ".." and not normal.startswith("../")


def _field_name(name: str) -> str:
    # As browsers and undici's FormData write a name in a Content-Disposition header.
    return name.replace("\r", "%0D").replace("\n", "%0A").replace('"', "%22")


def _multipart(job_field: bytes, inputs: Sequence[Union[str, Tuple[str, str]]], folder: str, field: str = "job"):
    """A multipart/form-data body: the `job` (or `workflow`) field first, then one part per input
    named by its path (or the name given with it: a workflow's NAME/PATH), streamed from disk
    (made again for each try, so that a submit can be sent again)."""
    boundary = "steward-" + uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"\r\n\r\n'.encode("utf-8")
        + job_field
        + b"\r\n"
    )
    parts = []
    for each in inputs:
        part_name, path = (each, each) if isinstance(each, str) else each
        name = _field_name(part_name)
        filename = _field_name(path)
        header = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode("utf-8")
        parts.append((header, os.path.join(folder, path)))
    tail = f"--{boundary}--\r\n".encode("utf-8")

    def make():
        sizes = [os.path.getsize(file) for _, file in parts]
        length = len(head) + sum(len(header) + size + 2 for (header, _), size in zip(parts, sizes)) + len(tail)

        def chunks():
            yield head
            for header, file in parts:
                yield header
                with open(file, "rb") as source:
                    while True:
                        chunk = source.read(FILE_CHUNK)
                        if not chunk:
                            break
                        yield chunk
                yield b"\r\n"
            yield tail

        return chunks(), length

    return make, f"multipart/form-data; boundary={boundary}"

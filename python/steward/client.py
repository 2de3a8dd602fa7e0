"""A client of Steward's HTTP API (README "The HTTP API"): submit, look, wait, fetch, control, follow.

    import steward
    client = steward.Client.from_env()          # STEWARD_URL, STEWARD_TOKEN, STEWARD_CA
    job_id = client.submit("examples/python/job.yaml")
    job = client.wait(job_id, timeout=600)
    client.fetch(job_id, "out/")
"""

import http.client
import json
import os
import posixpath
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union
from urllib.parse import quote, urlencode

from ._http import API_VERSION, API_VERSION_HEADER, RELEASE, RELEASE_HEADER, Answer, Transport
from .errors import IncompatibleServer, Invalid, StewardError, WaitTimeout, error_for

DEFAULT_URL = "http://127.0.0.1:4780"
ENDED = ("succeeded", "failed", "cancelled")
# The server writes a comment every 15 s on an idle event stream: three missed mean it is gone.
EVENT_READ_TIMEOUT = 45.0
FILE_CHUNK = 1 << 16

JobSpec = Union[Dict[str, Any], str, "os.PathLike[str]"]


class Client:
    """One or more servers (any of them: a standby redirects to its leader) and a bearer token."""

    def __init__(
        self,
        url: Union[str, List[str]] = DEFAULT_URL,
        token: Optional[str] = None,
        ca: Optional[str] = None,
        retry_seconds: float = 30.0,
    ):
        urls = url.split(",") if isinstance(url, str) else list(url)
        self._http = Transport(urls, token, ca=ca, retry_seconds=retry_seconds)
        self.urls = self._http.urls

    @classmethod
    def from_env(cls, **options) -> "Client":
        """The client the CLI would be: STEWARD_URL (a comma-separated list: any of these servers,
        default http://127.0.0.1:4780), STEWARD_TOKEN (else the admin token of a `steward up` in
        ./.steward, or $STEWARD_DATA), STEWARD_CA (a private authority's certificate)."""
        token = os.environ.get("STEWARD_TOKEN")
        if not token:
            local = os.path.join(os.environ.get("STEWARD_DATA", ".steward"), "admin-token")
            if os.path.isfile(local):
                with open(local, encoding="utf-8") as file:
                    token = file.read().strip()
        return cls(
            os.environ.get("STEWARD_URL") or DEFAULT_URL,
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
    ) -> str:
        """Submits a job and answers its id once it is durable. `spec` is a dict, a job file's text
        (YAML or JSON), or a job file's path (.yaml, .yml, .json). Its inputs are uploaded from
        `base_dir`: by default the job file's folder, or the current folder for a dict or text.

        The submit carries an Idempotency-Key (a fresh one unless given), so a submit whose answer
        was lost is sent again, to the next server too, without making a second job."""
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
        folder = os.path.abspath(base_dir or os.getcwd())
        key = idempotency_key or uuid.uuid4().hex
        headers = {"Idempotency-Key": key}
        if text is not None:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                data = parsed
        if data is not None:
            inputs = _inputs_to_send(data.get("inputs"), folder)
            if not inputs:
                return self._json("POST", "/api/v1/jobs", payload=data, headers=headers, idempotent=True)["id"]
            job_field = json.dumps(data).encode("utf-8")
        else:
            assert text is not None
            yaml = text.encode("utf-8")
            yaml_headers = {"Content-Type": "application/yaml"}
            # No YAML parser here: a job file that may name inputs is read by the server (a dry
            # run, which creates nothing) to learn them; one that names none goes as it is.
            inputs = []
            if "inputs" in text:
                checked = self._json(
                    "POST", "/api/v1/jobs", {"dryRun": True}, body=yaml, headers=yaml_headers, idempotent=True
                )
                inputs = _inputs_to_send(checked["spec"].get("inputs"), folder)
            if not inputs:
                answer = self._request(
                    "POST", "/api/v1/jobs", body=yaml, headers={**yaml_headers, **headers}, idempotent=True
                )
                return json.loads(answer.read().decode("utf-8"))["id"]
            job_field = yaml
        body, content_type = _multipart(job_field, inputs, folder)
        answer = self._request(
            "POST", "/api/v1/jobs", body=body, headers={"Content-Type": content_type, **headers}, idempotent=True
        )
        return json.loads(answer.read().decode("utf-8"))["id"]

    def job(self, job_id: str, tasks: bool = True, events: bool = True) -> dict:
        """The job (GET /api/v1/jobs/ID): state, counts, spec, and its tasks and events unless left out."""
        return self._json("GET", f"/api/v1/jobs/{_segment(job_id)}", {"tasks": tasks, "events": events})

    def wait(self, job_id: str, timeout: Optional[float] = None, poll: float = 1.0) -> dict:
        """Waits until the job has ended (succeeded, failed or cancelled) and answers it, with its
        tasks and events. Raises WaitTimeout after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.1
        while True:
            seen = self.job(job_id, tasks=False, events=False)
            if seen["state"] in ENDED:
                return self.job(job_id)
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise WaitTimeout(f"job {job_id} is still {seen['state']} after {timeout:g} s", job=seen)
            pause = delay if deadline is None else min(delay, max(0.0, deadline - now))
            time.sleep(pause)
            delay = min(poll, delay * 1.5)

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
        start, running attempts are stopped."""
        return self._control(job_id, "cancel", {"tasks": _task_list(tasks)} if tasks is not None else {})

    def retry(
        self, job_id: str, tasks: Optional[Union[str, Sequence[int]]] = None, failed: bool = False
    ) -> dict:
        """Gives failed or cancelled tasks new attempts with a fresh retry budget (from their
        checkpoint if they have one): every such task, only `tasks` ("3,7-9" or a list), or with
        `failed=True` only the failed ones. The answer is the job, with `retried` and `skipped`."""
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
    ) -> Iterator[dict]:
        """The job events as they are committed (GET /api/v1/events), each a dict {jobId, id, at,
        kind, data, message}. With `after`, the stored events after that id come first (0: all of
        them). A dropped connection is made again with Last-Event-ID, so no event is missed or
        repeated. With `progress`, a job's task counts come too, as {jobId, state, taskCount, counts}
        (not stored: none is replayed)."""
        last = after
        pause = 0.1
        while True:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            answer = self._request("GET", "/api/v1/events", {"job": job}, headers=headers, read_timeout=EVENT_READ_TIMEOUT)
            try:
                for kind, ident, data in _server_sent_events(answer):
                    pause = 0.1
                    if kind == "job":
                        if ident is not None:
                            last = int(ident)
                        yield json.loads(data)
                    elif kind == "progress" and progress:
                        yield json.loads(data)
            except (OSError, http.client.HTTPException):
                pass  # the connection dropped (a restart, a failover): made again below
            finally:
                answer.close()
            time.sleep(pause)
            pause = min(2.0, pause * 2)


def _server_sent_events(answer: Answer):
    """(event, id, data) for each event of a text/event-stream (comments and retry: skipped)."""
    response = answer.response
    kind, ident, data = "message", None, []
    while True:
        line = response.readline()
        if not line:
            return
        line = line.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield kind, ident, "\n".join(data)
            kind, ident, data = "message", None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            kind = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            ident = value


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


def _multipart(job_field: bytes, inputs: List[str], folder: str):
    """A multipart/form-data body: the `job` field first, then one part per input named by its
    path, streamed from disk (made again for each try, so that a submit can be sent again)."""
    boundary = "steward-" + uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="job"\r\n\r\n'.encode("utf-8") + job_field + b"\r\n"
    )
    parts = []
    for path in inputs:
        name = _field_name(path)
        header = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{name}"\r\n'
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

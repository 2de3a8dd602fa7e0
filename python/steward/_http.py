"""The client's way to the servers, with the rules of src/common/transport/http-client.ts.

- Several servers: a try that fails moves on to the next one at once; a round of them all that
  failed waits a capped exponential back-off with jitter, within a time budget.
- Trying again is safe only when the server cannot have acted twice: a connection that was never
  made sent nothing (any request is tried again); a connection lost before the answer, a timeout
  or a 503 may follow a request the server acted on (only idempotent ones are tried again: GET,
  PUT, DELETE, and a submit carrying its Idempotency-Key).
- A redirect (a standby naming its leader) is followed with the token and the body, but only to an
  origin of the servers given, and never from HTTPS to plain HTTP: anywhere else the bearer token
  would go to whoever the Location names.
"""

import http.client
import random
import socket
import ssl
import time
from typing import Callable, Iterable, List, Optional, Tuple, Union
from urllib.parse import urljoin, urlsplit

from .errors import RedirectRefused, Unreachable

# How long a request keeps trying servers that refuse connections or answer 503 (a restart, a
# failover) before it raises Unreachable: the CLI's 5 s.
RETRY_SECONDS = 5.0
FIRST_DELAY = 0.1
MAX_DELAY = 2.0
ANSWER_TIMEOUT = 30.0
MAX_REDIRECTS = 3
REDIRECT_STATUSES = (307, 308)
IDEMPOTENT_METHODS = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}

# The HTTP API version this client speaks (the N of /api/vN), sent with each request and compared
# with the one each answer names; and this package's release, named in a refusal.
API_VERSION = 1
API_VERSION_HEADER = "Steward-Api-Version"
RELEASE_HEADER = "Steward-Release"
RELEASE = "0.1.0"

# A body: bytes, or a function that makes it anew for each try (chunks and their total length).
Body = Union[None, bytes, Callable[[], Tuple[Iterable[bytes], int]]]


def origin_of(url: str) -> Optional[str]:
    """scheme://host:port, with the scheme's default port spelled out, or None for a non-HTTP URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}:{port}"


def redirect_refusal(source: str, target: str, allowed: set) -> Optional[str]:
    """Why a redirect from `source` to `target` must not be followed, or None when it may."""
    if urlsplit(source).scheme == "https" and urlsplit(target).scheme != "https":
        return "it leaves HTTPS for plain HTTP"
    destination = origin_of(target)
    if destination is not None and (destination == origin_of(source) or destination in allowed):
        return None
    return "not one of the servers given (STEWARD_URL)"


def retry_delay(rounds: int) -> float:
    """The back-off after `rounds` failed rounds: doubling up to the cap, jitter over its upper half."""
    ceiling = min(MAX_DELAY, FIRST_DELAY * 2 ** max(0, rounds - 1))
    return ceiling / 2 + ceiling / 2 * random.random()


def retry_after_seconds(header: Optional[str]) -> float:
    try:
        return max(0.0, float(header)) if header else 0.0
    except ValueError:
        return 0.0


class Answer:
    """An answer with its status and headers; its body is read with read() or as a stream."""

    def __init__(
        self,
        response: http.client.HTTPResponse,
        connection: http.client.HTTPConnection,
        sock: Optional[socket.socket] = None,
    ):
        self.response = response
        self.connection = connection
        # The connection forgets its socket once an answer without a length (a stream) is in:
        # kept here, for its timeout and for abort().
        self.sock = sock if sock is not None else connection.sock
        self.status = response.status

    def header(self, name: str) -> Optional[str]:
        return self.response.getheader(name)

    def read(self) -> bytes:
        try:
            return self.response.read()
        finally:
            self.close()

    def chunks(self, size: int = 65536):
        """The body as it arrives (a followed log, an event stream)."""
        try:
            while True:
                chunk = self.response.read1(size)
                if not chunk:
                    return
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        self.response.close()
        self.connection.close()

    def abort(self) -> None:
        """Cuts the connection, from any thread: a read blocked on it (in another thread) returns."""
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Failure(Exception):
    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind  # refused (nothing sent), lost, timeout, failed
        self.detail = detail


class Transport:
    def __init__(
        self,
        urls: List[str],
        token: Optional[str],
        ca: Optional[str] = None,
        retry_seconds: float = RETRY_SECONDS,
        answer_timeout: float = ANSWER_TIMEOUT,
    ):
        self.urls = [url.strip().rstrip("/") for url in urls if url.strip()]
        if not self.urls:
            raise ValueError("no server URL")
        for url in self.urls:
            if origin_of(url) is None:
                raise ValueError(f"not an http(s) URL: {url}")
        self.token = token
        self.retry_seconds = retry_seconds
        self.answer_timeout = answer_timeout
        self.allowed = {origin_of(url) for url in self.urls}
        self.ssl_context = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
        self.preferred = 0

    def request(
        self,
        method: str,
        path: str,
        headers: Optional[dict] = None,
        body: Body = None,
        idempotent: Optional[bool] = None,
        read_timeout: Optional[float] = -1.0,
        answer_timeout: Optional[float] = -1.0,
    ) -> Answer:
        """Sends the request, trying again as the rules above allow, and answers whatever status
        came (a 503 that outlasted the budget too). `read_timeout` is the socket's timeout once the
        answer's headers are in (None: none, for a followed log); by default the answer timeout.
        `answer_timeout` overrides the client's wait for the headers (None: no limit)."""
        wait = self.answer_timeout if answer_timeout == -1.0 else answer_timeout
        method = method.upper()
        if idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS
        sent_headers = {
            "Accept": "application/json",
            "User-Agent": f"steward-python/{RELEASE}",
            API_VERSION_HEADER: str(API_VERSION),
            RELEASE_HEADER: RELEASE,
        }
        sent_headers.update(headers or {})
        if self.token:
            sent_headers["Authorization"] = f"Bearer {self.token}"
        started = time.monotonic()
        count = len(self.urls)
        index = self.preferred
        rounds = in_round = tries = 0
        retry_after = 0.0
        while True:
            base = self.urls[index]
            url = base + path
            tries += 1
            failure: Optional[_Failure] = None
            answer: Optional[Answer] = None
            try:
                for _ in range(MAX_REDIRECTS + 1):
                    answer = self._try(method, url, sent_headers, body, wait)
                    location = answer.header("Location")
                    if answer.status not in REDIRECT_STATUSES or not location:
                        break
                    target = urljoin(url, location)
                    answer.close()
                    refusal = redirect_refusal(url, target, self.allowed)
                    if refusal is not None:
                        raise RedirectRefused(
                            f"refusing to follow a redirect to {target.split('?')[0]}: {refusal}"
                        )
                    url = target
            except _Failure as error:
                failure = error
            if answer is not None and failure is None:
                not_now = answer.status in REDIRECT_STATUSES or (answer.status == 503 and idempotent)
                if not not_now:
                    self.preferred = index
                    if read_timeout != -1.0 and answer.sock is not None:
                        answer.sock.settimeout(read_timeout)
                    return answer
                retry_after = max(retry_after, retry_after_seconds(answer.header("Retry-After")))
            else:
                assert failure is not None
                if failure.kind == "failed":
                    raise Unreachable(f"{method} {base}{path.split('?')[0]}: {failure.detail}")
                if failure.kind != "refused" and not idempotent:
                    raise Unreachable(
                        f"the connection to the Steward server at {base} broke before it answered "
                        f"{method} {path.split('?')[0]} ({failure.detail}); it may have been done: "
                        "look before trying again"
                    )
            in_round += 1
            index = (index + 1) % count
            delay = 0.0
            if in_round >= count:
                in_round = 0
                rounds += 1
                delay = max(retry_delay(rounds), retry_after)
                retry_after = 0.0
            if time.monotonic() + delay - started > self.retry_seconds:
                if answer is not None and failure is None:
                    return answer
                assert failure is not None
                raise Unreachable(
                    f"cannot reach the Steward server at {', '.join(self.urls)} ({failure.detail}; "
                    f"gave up after {tries} {'try' if tries == 1 else 'tries'} in "
                    f"{time.monotonic() - started:.1f} s); is it running? Set STEWARD_URL to its address"
                )
            if answer is not None:
                answer.close()
            if delay > 0:
                time.sleep(delay)

    def _try(self, method: str, url: str, headers: dict, body: Body, wait: Optional[float]) -> Answer:
        parts = urlsplit(url)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(
                parts.hostname, parts.port or 443, timeout=self.answer_timeout, context=self.ssl_context
            )
        else:
            connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=self.answer_timeout)
        try:
            connection.connect()
        except ssl.SSLCertVerificationError as error:
            connection.close()
            raise _Failure(
                "failed",
                f"the server presented a certificate this client does not trust ({error.verify_message}); "
                "give its authority with ca= or STEWARD_CA",
            )
        except ssl.SSLError as error:
            connection.close()
            raise _Failure("failed", f"TLS: {error}")
        except (OSError, http.client.HTTPException) as error:
            # No connection: nothing was sent.
            connection.close()
            raise _Failure("refused", describe(error))
        # Connecting takes the client's usual time; the answer may be given longer (a followed log).
        sock = connection.sock
        if sock is not None:
            sock.settimeout(wait)
        try:
            sent = dict(headers)
            if body is None:
                connection.request(method, target, headers=sent)
            elif isinstance(body, bytes):
                sent["Content-Length"] = str(len(body))
                connection.request(method, target, body=body, headers=sent)
            else:
                chunks, length = body()
                sent["Content-Length"] = str(length)
                connection.putrequest(method, target, skip_accept_encoding=True)
                for name, value in sent.items():
                    connection.putheader(name, value)
                connection.endheaders()
                try:
                    for chunk in chunks:
                        connection.send(chunk)
                except OSError:
                    # The server may have answered before reading it all (413: an input too
                    # large) and closed: its answer says more than the broken pipe.
                    try:
                        return Answer(connection.getresponse(), connection, sock)
                    except (OSError, http.client.HTTPException):
                        pass
                    raise
            response = connection.getresponse()
        except socket.timeout as error:
            connection.close()
            raise _Failure("timeout", f"no answer within {wait or 0:g} s ({error})")
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise _Failure("lost", describe(error))
        return Answer(response, connection, sock)


def describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__

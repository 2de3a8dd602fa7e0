"""Following GET /api/v1/events: the server-sent events read as dicts, the stream made again with
Last-Event-ID after a drop, and a close() that ends it from any thread (what async_events needs:
its reads run in a worker thread, which close() unblocks by cutting the connection)."""

import asyncio
import http.client
import json
import time
from typing import Callable, Iterator, Optional

from ._http import Answer
from .errors import Unreachable

# After a drop, how long the stream is made again before Unreachable is raised: a server's restart
# or a failover takes a few seconds, longer than a single request's retry budget.
RECONNECT_SECONDS = 30.0


class EventStream:
    """An iterator of the job events ({jobId, id, at, kind, data, message}) and, with `progress`,
    of task counts ({jobId, state, taskCount, counts}). `open_stream(last)` makes the request,
    with Last-Event-ID when `last` is not None."""

    def __init__(self, open_stream: Callable[[Optional[int]], Answer], after: Optional[int], progress: bool):
        self._open = open_stream
        self._last = after
        self._progress = progress
        self._answer: Optional[Answer] = None
        self._closed = False
        self._events = self._run()

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> dict:
        return next(self._events)

    def close(self) -> None:
        """Ends the stream; safe from another thread while a read waits (it returns at once)."""
        self._closed = True
        answer = self._answer
        if answer is not None:
            answer.abort()
        try:
            self._events.close()
        except ValueError:
            pass  # being read in another thread: it sees the cut connection and ends

    def _run(self) -> Iterator[dict]:
        pause = 0.1
        dropped_at: Optional[float] = None
        while not self._closed:
            try:
                answer = self._open(self._last)
            except Unreachable:
                if dropped_at is None or time.monotonic() - dropped_at > RECONNECT_SECONDS:
                    raise
                time.sleep(pause)
                continue
            self._answer = answer
            dropped_at = None
            try:
                if self._closed:
                    return
                for kind, ident, data in _server_sent_events(answer):
                    pause = 0.1
                    if kind == "job":
                        if ident is not None:
                            self._last = int(ident)
                        yield json.loads(data)
                    elif kind == "progress" and self._progress:
                        yield json.loads(data)
            except (OSError, http.client.HTTPException):
                pass  # the connection dropped (a restart, a failover): made again below
            finally:
                self._answer = None
                answer.close()
            if self._closed:
                return
            dropped_at = time.monotonic()
            time.sleep(pause)
            pause = min(2.0, pause * 2)


_END = object()


class AsyncEventStream:
    """The stream as an async iterator, each read in a worker thread. A cancelled read closes the
    stream (cutting the connection frees the thread); so do aclose(), leaving `async with`, and
    dropping the iterator (a loop left with break)."""

    def __init__(self, stream: EventStream):
        self._stream = stream

    def __aiter__(self) -> "AsyncEventStream":
        return self

    async def __anext__(self) -> dict:
        try:
            event = await asyncio.to_thread(next, self._stream, _END)
        except BaseException:
            self._stream.close()
            raise
        if event is _END:
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        self._stream.close()

    async def __aenter__(self) -> "AsyncEventStream":
        return self

    async def __aexit__(self, *_exc) -> None:
        self._stream.close()

    def __del__(self) -> None:
        self._stream.close()


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

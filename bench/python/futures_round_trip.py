"""The round trip of tiny calls through steward.futures (bench/futures-round-trip.ts runs it):
map of x + 1 over range(CALLS), one call a task (Executor.map's default chunksize), then the same
with CHUNKSIZE calls a task. Prints one JSON line: {pickler, calls, seconds, chunked: {...}}.

Environment: STEWARD_URL, STEWARD_TOKEN; CALLS (1000), CHUNKSIZE (50), TIMEOUT seconds (1800).
"""

import functools
import json
import operator
import os
import time

from steward.futures import StewardExecutor

CALLS = int(os.environ.get("CALLS") or 1000)
CHUNKSIZE = int(os.environ.get("CHUNKSIZE") or 50)
TIMEOUT = float(os.environ.get("TIMEOUT") or 1800)


def timed(executor, function, chunksize):
    start = time.monotonic()
    got = list(executor.map(function, range(CALLS), timeout=TIMEOUT, chunksize=chunksize))
    seconds = time.monotonic() - start
    if got != list(range(1, CALLS + 1)):
        raise SystemExit(f"wrong results: {got[:5]}...")
    return seconds


with StewardExecutor() as executor:
    # A lambda needs cloudpickle; without it, a function the standard pickle sends by name.
    increment = (lambda x: x + 1) if executor.pickler == "cloudpickle" else functools.partial(operator.add, 1)
    client_cpu = time.process_time()
    seconds = timed(executor, increment, 1)
    client_cpu = time.process_time() - client_cpu
    chunked = timed(executor, increment, CHUNKSIZE)
print(
    json.dumps(
        {
            "pickler": executor.pickler,
            "calls": CALLS,
            "seconds": seconds,
            "clientCpuSeconds": client_cpu,
            "chunked": {"chunksize": CHUNKSIZE, "seconds": chunked},
        }
    )
)

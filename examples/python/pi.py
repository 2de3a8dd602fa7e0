"""A Monte Carlo estimate of pi that checkpoints with the Steward SDK.

The points are drawn in chunks, each from its own seeded generator, and the state (chunks done,
hits so far) is saved after every chunk: a restart, a migration or a preemption resumes from the
last chunk saved and ends with the same estimate, to the last digit, as a run that was never
stopped. Outside Steward it runs too (its checkpoint in ./.steward-checkpoint).

Environment: CHUNKS, POINTS (per chunk), SEED, and PAUSE (seconds to rest after each chunk, to
watch it or to migrate it by hand; 0 by default).
"""

import os
import random
import sys
import time

from steward import job

CHUNKS = int(os.environ.get("CHUNKS", "80"))
POINTS = int(os.environ.get("POINTS", "100000"))
SEED = int(os.environ.get("SEED", "1"))
PAUSE = float(os.environ.get("PAUSE", "0"))

state = job.load_checkpoint("pi.json") or {"chunk": 0, "hits": 0}
if state["chunk"]:
    print(f"resuming at chunk {state['chunk']} of {CHUNKS} (restarted={job.restarted()})", flush=True)
else:
    print(f"starting: {CHUNKS} chunks of {POINTS} points", flush=True)


def stop():
    # `state` is replaced whole after each chunk, so it is always a finished chunk's.
    job.save_checkpoint(state, "pi.json")
    print(f"stop requested: saved chunk {state['chunk']}", flush=True)
    sys.exit(0)


job.on_stop(stop)

while state["chunk"] < CHUNKS:
    chunk = state["chunk"]
    draw = random.Random(SEED * 1_000_003 + chunk).random
    hits = 0
    for _ in range(POINTS):
        x, y = draw(), draw()
        if x * x + y * y < 1.0:
            hits += 1
    state = {"chunk": chunk + 1, "hits": state["hits"] + hits}
    job.save_checkpoint(state, "pi.json")
    job.progress(state["chunk"] / CHUNKS)
    print(f"chunk {state['chunk']}", flush=True)
    if PAUSE:
        time.sleep(PAUSE)

estimate = 4 * state["hits"] / (CHUNKS * POINTS)
with open("pi.txt", "w") as out:
    out.write(f"{estimate:.12f} from {state['hits']} hits of {CHUNKS * POINTS} points\n")
print(f"pi is about {estimate:.12f}", flush=True)

"""Submits examples/python (its job file as JSON, argv[1]; inputs from argv[2]), migrates it once
it has done a few chunks, waits for it and fetches its estimate; prints what the test checks."""

import json
import os
import sys
import time

import steward

client = steward.Client.from_env()
job_id = client.submit(sys.argv[1], base_dir=sys.argv[2])
deadline = time.time() + 60
while b"chunk 5\n" not in client.logs(job_id):
    assert time.time() < deadline, client.logs(job_id, stream="stderr")
    time.sleep(0.1)
client.migrate(job_id)
job = client.wait(job_id, timeout=90)
out = os.path.join(os.environ["WORK"], "out")
client.fetch(job_id, out)
with open(os.path.join(out, "pi.txt")) as file:
    result = file.read()
print(
    json.dumps(
        {
            "state": job["state"],
            "attempts": job["tasks"][0]["attempts"],
            "first": client.logs(job_id, attempt=1).decode(),
            "second": client.logs(job_id, attempt=2).decode(),
            "result": result,
        }
    )
)

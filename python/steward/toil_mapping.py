"""How a Toil job becomes a Steward job, and how a Steward job's end becomes Toil's exit status.

Standard library only (the Toil batch system, steward.toil_batch_system, is the part that needs
Toil): a Toil job is a shell command with cores, memory and disk; it becomes one Steward job that
runs the command with `bash -c`, and its last attempt's exit code is what Toil is told.
"""

import math
import re
from typing import Any, Dict, Optional, Tuple

# A job file's `env` names (docs/job-file.md).
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A job file's `name` is at most 200 characters.
NAME_LIMIT = 200
MIB = 1 << 20
# What Toil reads as "no exit status" (toil.batchSystems.abstractBatchSystem).
EXIT_STATUS_UNAVAILABLE = 255

# Toil's BatchJobExitReason values, by name (the integers are Toil's; kept here so that this
# module needs no Toil).
FINISHED = "FINISHED"
FAILED = "FAILED"
LOST = "LOST"
KILLED = "KILLED"
MEMLIMIT = "MEMLIMIT"

ENDED_STATES = frozenset(("succeeded", "failed", "cancelled"))


def job_spec(
    command: str,
    name: str,
    cores: float,
    memory_bytes: int,
    disk_bytes: int,
    environment: Dict[str, str],
    qos: Optional[str] = None,
    disk_requirement: bool = True,
) -> Dict[str, Any]:
    """The Steward job file of a Toil job: `bash -c COMMAND`, `cores` as whole cpus (at least
    one), `memory_bytes` as memoryMb (rounded up), `disk_bytes` as a requirement on the host's free
    disk (`host.diskFreeMb`) unless `disk_requirement` is off, the environment Toil sets (names a
    job file cannot carry are left out). One attempt: Toil retries a failed job itself
    (--retryCount); a host lost under it is restarted by Steward without Toil seeing it."""
    spec: Dict[str, Any] = {
        "name": _job_name(name),
        "command": ["bash", "-c", command],
        "resources": {
            "cpus": max(1, int(math.ceil(cores - 1e-9))) if cores else 1,
            "memoryMb": int(math.ceil(memory_bytes / MIB)) if memory_bytes else 0,
        },
        "retry": {"maxAttempts": 1},
    }
    env = {key: str(value) for key, value in environment.items() if ENV_NAME.match(key)}
    if env:
        spec["env"] = env
    disk_mb = int(math.ceil(disk_bytes / MIB)) if disk_bytes else 0
    if disk_requirement and disk_mb > 0:
        spec["requirements"] = f"host.diskFreeMb >= {disk_mb}.0"
    if qos:
        spec["qos"] = qos
    return spec


def _job_name(name: str) -> str:
    text = "toil-" + (" ".join(str(name).split()) or "job")
    return text[:NAME_LIMIT]


def outcome(job: Dict[str, Any]) -> Tuple[int, str, Optional[float]]:
    """An ended Steward job (GET /api/v1/jobs/ID with its tasks) as Toil's (exit status, exit
    reason's name, wall seconds): the exit code of its last attempt (128+N for a signal N), 0 for
    a job that succeeded, 255 when no attempt says; the reason from the job's state; the wall
    time from the last attempt's usage (None when not measured)."""
    state = job.get("state")
    attempt = _last_attempt(job)
    code: Optional[int] = None
    wall: Optional[float] = None
    reason_text = ""
    if attempt is not None:
        code = attempt.get("exitCode")
        usage = attempt.get("usage") or {}
        if code is None and usage.get("signal") is not None:
            code = 128 + int(usage["signal"])
        seconds = usage.get("wallSeconds")
        wall = float(seconds) if seconds is not None and seconds > 0 else None
        reason_text = (attempt.get("reason") or "").lower()
    if state == "succeeded":
        return 0, FINISHED, wall
    if code is None:
        code = EXIT_STATUS_UNAVAILABLE
    elif code == 0:
        # Ended without succeeding yet exited 0 (a cancel that landed as it ended): not a success.
        code = EXIT_STATUS_UNAVAILABLE
    if state == "cancelled":
        return code, KILLED, wall
    if "memory" in reason_text:
        return code, MEMLIMIT, wall
    return code, FAILED, wall


def _last_attempt(job: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    tasks = job.get("tasks") or []
    if not tasks:
        return None
    attempts = tasks[0].get("attempts") or []
    return attempts[-1] if attempts else None

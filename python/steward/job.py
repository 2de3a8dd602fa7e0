"""The job SDK for Python: what src/common/sdk/index.js gives a Node.js job, over the same files.

    from steward import job

    state = job.load_checkpoint() or {"step": 0}   # None on a first run
    job.on_stop(lambda: (job.save_checkpoint(state), sys.exit(0)))
    job.save_checkpoint(state)                     # atomic: temporary file, flush, rename
    job.progress(0.5)                              # 0..1, for the scheduler
    job.set_requirements('host.memFreeMb >= 2048.0')  # self-migration
    job.restarted()                                # STEWARD_RESTARTED == 1
    job.task_param(); job.params()                 # an array task's parameter: text, mapping

Outside Steward it works too: the checkpoint folder is ./.steward-checkpoint, and progress and
requirements go nowhere.
"""

import json
import math
import os
import signal
from typing import Any, Callable, Dict, List, Union

from ._futures_runner import write_atomically

DEFAULT_NAME = "state.json"
# Where a multi-node job's rank declares the generation of the state it saved.
GENERATION_FILE = ".generation"

_stop_requested = False
_stop_handlers: List[Callable[[], Any]] = []


def restarted() -> bool:
    """True when this attempt was restarted from a checkpoint (STEWARD_RESTARTED=1)."""
    return os.environ.get("STEWARD_RESTARTED") == "1"


def checkpoint_dir() -> str:
    """The checkpoint folder: $STEWARD_CHECKPOINT_DIR, or ./.steward-checkpoint outside Steward."""
    return os.environ.get("STEWARD_CHECKPOINT_DIR") or os.path.join(os.getcwd(), ".steward-checkpoint")


def load_checkpoint(name: str = DEFAULT_NAME) -> Any:
    """The last saved state (parsed JSON for a .json name, bytes otherwise), or None when there is none."""
    try:
        with open(os.path.join(checkpoint_dir(), name), "rb") as file:
            data = file.read()
    except FileNotFoundError:
        return None
    return json.loads(data.decode("utf-8")) if name.endswith(".json") else data


def save_checkpoint(data: Any, name: str = DEFAULT_NAME) -> None:
    """Saves state atomically: written to a temporary file, flushed, then renamed over the old one,
    so the agent never uploads half a checkpoint. bytes and str are stored as they are, anything
    else as JSON.

    A multi-node job's declared generation is taken back first: until checkpoint_generation says
    the next one, the folder is no generation's, and the agent commits none of it (it would mix one
    generation's files with the next's)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        payload = bytes(data)
    elif isinstance(data, str):
        payload = data.encode("utf-8")
    else:
        payload = json.dumps(data).encode("utf-8")
    folder = checkpoint_dir()
    try:
        os.remove(os.path.join(folder, GENERATION_FILE))
    except FileNotFoundError:
        pass
    _write_atomically(os.path.join(folder, name), payload)


def checkpoint_generation(generation: int) -> None:
    """Multi-node jobs: declares that the state this rank has saved is generation `generation` of
    the gang's coordinated checkpoint (a whole number that grows, the same on every rank for one
    state: the iteration, say). The agent commits the folder under it; a restart restores every rank
    to the newest generation all ranks committed. Call it after save_checkpoint."""
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 1:
        raise TypeError("checkpoint_generation needs a whole number from 1")
    _write_atomically(os.path.join(checkpoint_dir(), GENERATION_FILE), str(generation).encode("ascii"))


def task_param() -> Union[str, None]:
    """This task's parameter in an array with `params` or `paramsFile` (STEWARD_TASK_PARAM): a
    string as given, a mapping as JSON; None when the job gives its tasks none."""
    return os.environ.get("STEWARD_TASK_PARAM")


def params() -> Dict[str, Any]:
    """This task's parameter as a mapping, its values with their types (numbers, booleans): the
    JSON of STEWARD_TASK_PARAM when it is an object; {} when there is no parameter or it is not one."""
    text = task_param()
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def gang() -> Dict[str, Any]:
    """This process's place in a multi-node job: {rank, count, coordinator, nodes, nodes_file}.
    `nodes` lists the ranks' addresses, rank 0 first (from the OpenMPI hostfile at nodes_file);
    a single-host job is rank 0 of 1, with no coordinator and no nodes."""
    nodes_file = os.environ.get("STEWARD_NODES_FILE") or None
    nodes: List[str] = []
    if nodes_file:
        with open(nodes_file, encoding="utf-8") as file:
            # `ADDRESS slots=1 # HOST rank R`, one line per rank, rank 0 first.
            nodes = [line.split()[0] for line in file if line.strip()]
    return {
        "rank": int(os.environ.get("STEWARD_NODE_RANK") or 0),
        "count": int(os.environ.get("STEWARD_NODE_COUNT") or 1),
        "coordinator": os.environ.get("STEWARD_COORDINATOR") or None,
        "nodes": nodes,
        "nodes_file": nodes_file,
    }


def progress(fraction: float) -> None:
    """Tells the scheduler how far the job is, a fraction from 0 to 1 ($STEWARD_PROGRESS_FILE)."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not math.isfinite(fraction):
        raise TypeError("progress needs a number from 0 to 1")
    path = os.environ.get("STEWARD_PROGRESS_FILE")
    if not path:
        return
    _write_atomically(path, repr(min(1.0, max(0.0, float(fraction)))).encode("ascii"))


def set_requirements(expression: str) -> None:
    """Replaces the job's requirements (a CEL expression over host facts) for its later placements
    ($STEWARD_REQUIREMENTS_FILE); if this host no longer satisfies them, the job is moved, with its
    checkpoint, to one that does (self-migration). An invalid expression is reported in the job's
    events and ignored."""
    if not isinstance(expression, str):
        raise TypeError("set_requirements needs a CEL expression")
    path = os.environ.get("STEWARD_REQUIREMENTS_FILE")
    if not path:
        return
    _write_atomically(path, expression.encode("utf-8"))


def on_stop(callback: Callable[[], Any]) -> None:
    """Calls `callback` when Steward asks the job to stop (migration, preemption, hold, cancel:
    SIGTERM). The job then has the checkpoint grace period to save its state and exit; the callback
    runs in the main thread, between two of its steps, and may call sys.exit. Call it from the main
    thread (Python's rule for signal handlers)."""
    _stop_handlers.append(callback)
    if len(_stop_handlers) == 1:
        signal.signal(signal.SIGTERM, _on_sigterm)


def stop_requested() -> bool:
    """Whether a stop was asked (SRS Check_Stop), for loops that poll instead of using a callback.
    The first call installs the SIGTERM handler, so that a stop no longer kills the process at once."""
    if not _stop_handlers:
        on_stop(lambda: None)
    return _stop_requested


def _on_sigterm(_signum, _frame) -> None:
    global _stop_requested
    _stop_requested = True
    for callback in list(_stop_handlers):
        callback()


def _write_atomically(path: str, payload: Union[bytes, bytearray]) -> None:
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    write_atomically(path, payload, ".tmp")

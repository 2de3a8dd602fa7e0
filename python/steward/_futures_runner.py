"""Runs the calls of one task of a steward.futures job: sent with every such job as an input file
(the host needs no install of this package), run as

    python3 steward_futures_runner.py steward-call.pickle steward-result.pickle

Standard library only, plus cloudpickle when the payload was made with it. The payload (a plain
pickle) is {"version", "pickler", "function", "chunks", "counts"}: the function and each task's
calls pickled apart, so that this task unpickles its own calls only (STEWARD_TASK_INDEX; 0 for a
single call). The result (a plain pickle) is {"version", "outcomes"}, one outcome a call, in order:

    ("ok", pickled value)
    ("error", pickled exception or None, "module.Type", str(exception), traceback text)

A call that raises is an outcome like any other: the runner writes the file and exits 0, so that
Steward collects it (a job's outputs are kept when it succeeds). A runner that dies before
writing it (killed, out of memory, its host lost) leaves the task to Steward: retried or failed.
"""

import os
import pickle
import sys
import traceback

VERSION = 1


def pickler_dumps(name):
    """The dumps of the pickler the client chose ("cloudpickle" or "pickle"); pickle's when
    cloudpickle is not importable here (the call then failed already, unpickling its function)."""
    if name == "cloudpickle":
        try:
            import cloudpickle

            return cloudpickle.dumps
        except ImportError:
            pass
    return pickle.dumps


def failure(error, dumps):
    """An outcome for an exception: pickled when it comes back as one (else None), with its type's
    name, its text and its traceback."""
    kind = type(error)
    try:
        pickled = dumps(error)
        pickle.loads(pickled)  # an exception that pickles but does not unpickle is sent as text
    except Exception:
        pickled = None
    text = "".join(traceback.format_exception(kind, error, error.__traceback__))
    try:
        message = str(error)
    except Exception:
        message = repr(error)
    return ("error", pickled, f"{kind.__module__}.{kind.__qualname__}", message, text)


def run_calls(function, calls, dumps):
    """Each (args, kwargs) of `calls` called, its outcome kept; a KeyboardInterrupt stops the task."""
    outcomes = []
    for args, kwargs in calls:
        try:
            value = function(*args, **kwargs)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # SystemExit too: it is the call's outcome
            outcomes.append(failure(error, dumps))
            continue
        try:
            outcomes.append(("ok", dumps(value)))
        except Exception as error:
            outcomes.append(failure(error, dumps))
    return outcomes


def outcomes_of(payload, task):
    """The outcomes of task `task`'s calls, from the payload as the client wrote it."""
    dumps = pickler_dumps(payload.get("pickler"))
    count = payload["counts"][task]
    try:
        function = pickle.loads(payload["function"])
        calls = pickle.loads(payload["chunks"][task])
    except Exception as error:
        # Not importable here (a module missing on this host), or cloudpickle missing: every call says so.
        return [failure(error, dumps)] * count
    return run_calls(function, calls, dumps)


def main(argv):
    call_path, result_path = argv[1], argv[2]
    task = int(os.environ.get("STEWARD_TASK_INDEX") or 0)
    with open(call_path, "rb") as file:
        payload = pickle.load(file)
    if payload.get("version") != VERSION:
        sys.stderr.write(f"steward futures: payload version {payload.get('version')!r}, runner {VERSION}\n")
        return 2
    write_atomically(result_path, pickle.dumps({"version": VERSION, "outcomes": outcomes_of(payload, task)}))
    return 0


def write_atomically(path, data, suffix=".part"):
    """Writes `data` as `path` whole or not at all: into PATH.PID.SUFFIX beside it, flushed to
    disk, then renamed over it. steward.job writes its files with it too (this file, sent alone
    and standard library only, is the one place both can import it from)."""
    temporary = f"{path}.{os.getpid()}{suffix}"
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

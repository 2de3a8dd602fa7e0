"""What a steward.futures job carries, both ways: the function and its calls pickled into the
payload the runner reads (_futures_runner.py), and the runner's outcomes made back into a value or
the exception the call raised, with the remote traceback as its cause."""

import pickle
import pkgutil
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ._futures_runner import VERSION

# The files of a job in its working folder: the runner and the payload are its inputs, the result
# its output.
RUNNER_FILE = "steward_futures_runner.py"
CALL_FILE = "steward-call.pickle"
RESULT_FILE = "steward-result.pickle"

Call = Tuple[tuple, dict]


def runner_source() -> bytes:
    """The runner script's text, as shipped inside this package (a zip's too)."""
    data = pkgutil.get_data(__package__ or "steward", "_futures_runner.py")
    if data is None:
        raise RuntimeError("steward._futures_runner is not readable")
    return data


def choose_pickler(cloudpickle: Any) -> Tuple[str, Callable[[Any], bytes]]:
    """("cloudpickle", its dumps) when the module is given (it pickles lambdas, local functions and
    those of __main__ by value), else ("pickle", pickle.dumps): functions importable by name only."""
    if cloudpickle is not None:
        return "cloudpickle", cloudpickle.dumps
    return "pickle", pickle.dumps


def local_pickler() -> Tuple[str, Callable[[Any], bytes]]:
    """The pickler of this process: cloudpickle when importable."""
    try:
        import cloudpickle
    except ImportError:
        cloudpickle = None
    return choose_pickler(cloudpickle)


def chunks_of(calls: Sequence[Call], size: int) -> List[List[Call]]:
    """The calls in runs of `size` (the last shorter), in order: one run a task."""
    if size < 1:
        raise ValueError("chunksize must be at least 1")
    return [list(calls[start : start + size]) for start in range(0, len(calls), size)]


def payload(function: Callable, chunks: Sequence[Sequence[Call]], pickler: Tuple[str, Callable[[Any], bytes]]) -> bytes:
    """The payload file of a job whose task i makes the calls of chunks[i]. Raises what pickling
    raises (a lambda without cloudpickle: pickle.PicklingError), before anything is submitted."""
    name, dumps = pickler
    return pickle.dumps(
        {
            "version": VERSION,
            "pickler": name,
            "function": dumps(function),
            "chunks": [dumps([(tuple(args), dict(kwargs)) for args, kwargs in chunk]) for chunk in chunks],
            "counts": [len(chunk) for chunk in chunks],
        }
    )


class RemoteTraceback(Exception):
    """The traceback of an exception raised on a Steward host: the `__cause__` of the exception a
    future raises, so that Python prints it above the local one."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


class RemoteError(Exception):
    """A call's exception that could not be brought back as itself (it did not pickle, or its type
    is not importable here): its type's name, its text and its traceback."""

    def __init__(self, type_name: str, message: str, traceback: str):
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name = type_name
        self.message = message
        self.traceback = traceback


class Outcome:
    """One call's outcome: `value` when it returned, else `error`, the exception to raise."""

    def __init__(self, value: Any = None, error: Optional[BaseException] = None):
        self.value = value
        self.error = error


def outcome_of(entry: tuple) -> Outcome:
    """An outcome of the runner's result made into the value, or the exception to raise: the
    remote one when it unpickles (its traceback as `__cause__`), else a RemoteError."""
    if entry[0] == "ok":
        try:
            return Outcome(value=pickle.loads(entry[1]))
        except Exception as error:
            return Outcome(error=error)
    _, pickled, type_name, message, text = entry
    error: Optional[BaseException] = None
    if pickled is not None:
        try:
            loaded = pickle.loads(pickled)
            if isinstance(loaded, BaseException):
                error = loaded
        except Exception:
            error = None
    if error is None:
        error = RemoteError(type_name, message, text)
    error.__cause__ = RemoteTraceback(text)
    return Outcome(error=error)


def outcomes_of_result(data: bytes, expected: int) -> List[Outcome]:
    """The outcomes of a task's result file, one a call; a file that does not hold `expected`
    of them is an error for each call."""
    try:
        result = pickle.loads(data)
        entries = result["outcomes"]
        if result.get("version") != VERSION or len(entries) != expected:
            raise ValueError(f"version {result.get('version')!r}, {len(entries)} outcomes for {expected} calls")
    except Exception as error:
        problem = ValueError(f"the result file is not the runner's: {error}")
        return [Outcome(error=problem) for _ in range(expected)]
    return [outcome_of(entry) for entry in entries]

"""Functions for test/python/scripts/futures_calls.py that the standard pickle sends by name: the
jobs import this module from their PYTHONPATH (the executor's env), so they run without cloudpickle."""

import os
import time


class Refused(Exception):
    """An exception of the caller's own type, raised on the host and re-raised as itself."""


def square(x):
    return x * x


def where():
    """The host's view of the call: its task index and its process, not the caller's."""
    return {"task": os.environ.get("STEWARD_TASK_INDEX"), "pid": os.getpid()}


def refuse(word):
    raise Refused(f"refused {word}")


def nap(seconds):
    time.sleep(seconds)
    return seconds

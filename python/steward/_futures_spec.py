"""The job file of a steward.futures call: the executor's options (what each call takes of a host,
how long, how often it is tried, with which python) made into the job Steward runs."""

import copy
from typing import Any, Dict, List, Optional, Union

from ._futures_payload import CALL_FILE, RESULT_FILE, RUNNER_FILE

# The options an executor takes, with their defaults (None: the job file's own default).
DEFAULTS: Dict[str, Any] = {
    "cpus": 1,
    "memory_mb": None,
    "gpus": None,
    "time_limit": None,
    "max_attempts": None,
    "requirements": None,
    "qos": None,
    "priority": None,
    "env": None,
    "python": "python3",
    "name": None,
    "job": None,
}
NAME_LIMIT = 200


def merged_options(base: Dict[str, Any], changes: Dict[str, Any]) -> Dict[str, Any]:
    """`base` with `changes` over it; an option not known raises TypeError naming it."""
    unknown = sorted(set(changes) - set(DEFAULTS))
    if unknown:
        known = ", ".join(sorted(DEFAULTS))
        plural = "s" if len(unknown) > 1 else ""
        raise TypeError(f"unknown executor option{plural} {', '.join(unknown)} (known: {known})")
    merged = dict(base)
    merged.update(changes)
    return merged


def python_command(python: Union[str, List[str]]) -> List[str]:
    """The interpreter's argv: a program ("python3", "/opt/py/bin/python") or a list of words."""
    if isinstance(python, str):
        if not python.strip():
            raise ValueError("python names no interpreter")
        return [python]
    words = [str(word) for word in python]
    if not words:
        raise ValueError("python names no interpreter")
    return words


def call_name(function: Any, mapped: bool) -> str:
    """A job's name for `steward ps`: the function's qualified name, `map NAME` for a map."""
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None) or type(function).__name__
    name = f"map {name}" if mapped else str(name)
    return name[:NAME_LIMIT]


def _deep_merge(target: Dict[str, Any], source: Dict[str, Any]) -> Dict[str, Any]:
    for key, value in source.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def job_spec(options: Dict[str, Any], name: str, task_count: int) -> Dict[str, Any]:
    """The job file: the runner over the payload (both inputs), the result as its output, an array
    of `task_count` tasks for a map of more than one task; the options' resources, limits and
    retries; `job` (any other keys of a job file) merged over it last."""
    spec: Dict[str, Any] = {
        "name": options.get("name") or name,
        "command": python_command(options["python"]) + [RUNNER_FILE, CALL_FILE, RESULT_FILE],
        "inputs": [RUNNER_FILE, CALL_FILE],
        "outputs": [RESULT_FILE],
    }
    resources: Dict[str, Any] = {"cpus": options["cpus"]}
    if options.get("memory_mb") is not None:
        resources["memoryMb"] = options["memory_mb"]
    if options.get("gpus") is not None:
        resources["gpus"] = options["gpus"]
    spec["resources"] = resources
    if options.get("time_limit") is not None:
        spec["timeLimitSeconds"] = options["time_limit"]
    if options.get("max_attempts") is not None:
        spec["retry"] = {"maxAttempts": options["max_attempts"]}
    for option, key in (("requirements", "requirements"), ("qos", "qos"), ("priority", "priority"), ("env", "env")):
        if options.get(option) is not None:
            spec[key] = copy.deepcopy(options[option])
    if task_count > 1:
        spec["array"] = {"count": task_count}
    extra: Optional[Dict[str, Any]] = options.get("job")
    if extra:
        _deep_merge(spec, extra)
    return spec

"""Steward from Python: a client of the HTTP API (`steward.Client`), the job SDK (`steward.job`),
and calls run as Steward jobs through concurrent.futures (`steward.futures.StewardExecutor`).

Standard library only, Python 3.9 and later. A job started by Steward finds this package on its
PYTHONPATH (the agent puts it there), so `from steward import job` works with no install.
"""

from importlib import import_module

from .errors import (
    Conflict,
    Forbidden,
    IncompatibleServer,
    Invalid,
    JobCancelled,
    JobFailed,
    NotFound,
    RateLimited,
    RedirectRefused,
    ServerError,
    StewardError,
    StewardJobError,
    TooLarge,
    Unauthorized,
    Unreachable,
    WaitTimeout,
    WorkflowFailed,
)
from .handles import Job, Workflow

from ._http import RELEASE as __version__

__all__ = [
    "Client",
    "Conflict",
    "Forbidden",
    "IncompatibleServer",
    "Invalid",
    "Job",
    "JobCancelled",
    "JobFailed",
    "NotFound",
    "RateLimited",
    "RedirectRefused",
    "ServerError",
    "StewardError",
    "StewardJobError",
    "TooLarge",
    "Unauthorized",
    "Unreachable",
    "WaitTimeout",
    "Workflow",
    "WorkflowFailed",
    "job",
]


def __getattr__(name):
    # The client loads http.client and ssl: a job that only checkpoints does not pay for them.
    # (import_module: `from . import job` here would ask this function again, endlessly.)
    if name == "Client":
        return import_module(".client", __name__).Client
    if name == "job":
        return import_module(".job", __name__)
    raise AttributeError(f"module 'steward' has no attribute {name!r}")

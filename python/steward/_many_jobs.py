"""The requests that name many jobs at once (GET /api/v1/jobs/states, POST /api/v1/jobs/cancel),
split as the CLI splits them (src/cli/many-jobs.ts): one request for up to MAX_JOBS_NAMED ids, a
longer list in requests of that many."""

from typing import Iterable, List, TypeVar, Union

# The most ids one request may name (src/common/api/job-states.ts).
MAX_JOBS_NAMED = 1000

T = TypeVar("T")


def job_ids(ids: Union[str, Iterable[str]]) -> List[str]:
    """The ids as strings, in the order given; a single id (a str, or a steward.Job) is a list of one."""
    if isinstance(ids, str):
        return [str(ids)]
    return [str(each) for each in ids]


def batches(items: Iterable[T], size: int = MAX_JOBS_NAMED) -> List[List[T]]:
    """`items` in runs of at most `size`, in order (none for an empty list)."""
    listed = list(items)
    return [listed[start : start + size] for start in range(0, len(listed), size)]

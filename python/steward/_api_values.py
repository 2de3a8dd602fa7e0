"""How the client writes values into the API's paths and queries (a path segment, a query value,
a task list, acct's `since`) and reads what it answers (a Link header's next page, a workflow's id)."""

import datetime
import re
from typing import Any, Optional, Sequence, Union
from urllib.parse import quote

# A workflow's id, as the server gives it (model/workflow-id.ts).
WORKFLOW_ID = re.compile(r"^flow-[1-9][0-9]*$")
# An age for acct's `since`, as `steward acct --since` takes it: 7d, 12h, 90m, 2w, 30s, 45.
AGE = re.compile(r"^(\d+)\s*([smhdw]?)$")
AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since_time(
    since: Union[None, str, datetime.datetime, datetime.timedelta], now: datetime.datetime
) -> Optional[str]:
    """acct's `since` as the ISO time the API takes (UTC, with Z), or None for no bound."""
    if since is None:
        return None
    if isinstance(since, datetime.timedelta):
        at = now - since
    elif isinstance(since, datetime.datetime):
        at = since if since.tzinfo else since.astimezone()
    elif isinstance(since, str):
        text = since.strip()
        age = AGE.match(text)
        if age:
            at = now - datetime.timedelta(seconds=int(age.group(1)) * AGE_UNITS[age.group(2)])
        elif re.match(r"^\d{4}-\d{2}-\d{2}$", text):
            at = datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)
        elif re.match(r"^\d{4}-\d{2}-\d{2}[T ]", text):
            try:
                at = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
            except ValueError:
                raise ValueError(f"since={since!r}: not a date or time") from None
            if at.tzinfo is None:
                at = at.astimezone()
        else:
            raise ValueError(f"since={since!r}: an age such as 7d, 12h or 2w, or a date such as 2026-11-01")
    else:
        raise TypeError("since is an age or date (str), a datetime, a timedelta or None")
    utc = at.astimezone(datetime.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _next_link(header: Optional[str]) -> Optional[str]:
    """The target of a Link header's rel="next", or None."""
    if not header:
        return None
    for part in header.split(","):
        target, _, params = part.partition(";")
        target = target.strip()
        if target.startswith("<") and target.endswith(">") and 'rel="next"' in params.replace(" ", ""):
            return target[1:-1]
    return None


def _query_value(value: Any) -> str:
    if value is True:
        return "1"
    if value is False:
        return "0"
    return str(value)


def _task_list(tasks: Union[str, Sequence[int]]) -> str:
    """A task list as the API takes it: "3,7-9" as given, or indexes joined ("3,7,8,9")."""
    if isinstance(tasks, str):
        return tasks
    return ",".join(str(int(index)) for index in tasks)


def _segment(value: Any) -> str:
    return quote(str(value), safe="")


def _is_workflow_id(value: Any) -> bool:
    return isinstance(value, str) and WORKFLOW_ID.match(str(value)) is not None


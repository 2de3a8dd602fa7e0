"""Reading a job or workflow file for a submit, with no YAML parser: a dict, a file's text or its
path; whether it is a workflow file; the inputs to upload, checked to exist; and the
multipart/form-data body that carries the file with them."""

import json
import os
import posixpath
import re
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .errors import Invalid

# A top-level `jobs:` makes a YAML file a workflow file (a job file has no such key); as the CLI
# tells them apart (src/cli/job-submission.ts), without parsing the YAML.
MAYBE_WORKFLOW = re.compile(r"""^(jobs|"jobs"|'jobs')[ \t]*:""", re.MULTILINE)
FILE_CHUNK = 1 << 16

JobSpec = Union[Dict[str, Any], str, "os.PathLike[str]"]


def _read_spec(spec: JobSpec, base_dir: Optional[str]) -> Tuple[Optional[dict], Optional[str], str]:
    """(data, text, folder): a dict as it is, or a file's (or the given) text, parsed when it is
    JSON; and the folder its inputs are read from."""
    text: Optional[str] = None
    data: Optional[dict] = None
    if isinstance(spec, dict):
        data = spec
    elif isinstance(spec, os.PathLike) or _looks_like_path(spec):
        path = os.fspath(spec)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no such job file: {path}")
        with open(path, encoding="utf-8") as file:
            text = file.read()
        if base_dir is None:
            base_dir = os.path.dirname(os.path.abspath(path))
    elif isinstance(spec, str):
        text = spec
    else:
        raise TypeError("submit takes a dict, a job file's text or a job file's path")
    if text is not None:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            data = parsed
    return data, (None if data is not None else text), os.path.abspath(base_dir or os.getcwd())


def _is_workflow(data: Optional[dict], text: Optional[str]) -> bool:
    """A workflow file rather than a job file: a mapping with a top-level `jobs`."""
    if data is not None:
        return "jobs" in data
    return text is not None and MAYBE_WORKFLOW.search(text) is not None


def _is_workflow_refusal(error: Invalid) -> bool:
    """The job route's 400 for a workflow file sent as a job."""
    return error.field == "jobs" and "workflow file" in error.message


def _checked_jobs(checked: dict) -> Dict[str, Any]:
    """A workflow dry run's jobs ([{name, spec, ...}], in the order a submit makes them) by name."""
    return {each["name"]: each["spec"] for each in checked.get("jobs") or [] if isinstance(each, dict)}


def _workflow_inputs(jobs: Any, folder: str) -> List[Tuple[str, str]]:
    """Each job's inputs to upload, as (part name NAME/PATH, path), checked to exist in `folder`;
    a missing one is refused naming jobs.NAME.inputs[i]."""
    found: List[Tuple[str, str]] = []
    if not isinstance(jobs, dict):
        return found
    for name, each in jobs.items():
        if not isinstance(each, dict):
            continue
        try:
            paths = _inputs_to_send(each.get("inputs"), folder)
        except Invalid as error:
            field = f"jobs.{name}.{error.field}"
            raise Invalid(f"jobs.{name}.{error.message}", field=field) from None
        found.extend((f"{name}/{path}", path) for path in paths)
    return found


def _looks_like_path(spec: Any) -> bool:
    """A string that names a job file rather than holding one: one line, a job file's suffix or an
    existing file."""
    if not isinstance(spec, str) or "\n" in spec:
        return False
    return spec.endswith((".yaml", ".yml", ".json")) or os.path.isfile(spec)


def _inputs_to_send(inputs: Any, folder: str) -> List[str]:
    """The job's inputs to upload, checked to exist in `folder`. A path that leaves the folder is
    left to the server, which refuses it naming the field (as the CLI does)."""
    if not isinstance(inputs, list):
        return []
    found = []
    for index, path in enumerate(inputs):
        if not isinstance(path, str) or not _stays_inside(path):
            continue
        if not os.path.isfile(os.path.join(folder, path)):
            raise Invalid(f"inputs[{index}]: {path}: no such file in {folder}", field=f"inputs[{index}]")
        found.append(path)
    return found


def _stays_inside(path: str) -> bool:
    normal = posixpath.normpath(path)
    return not posixpath.isabs(path) and normal != ".." and not normal.startswith("../")


def _field_name(name: str) -> str:
    # As browsers and undici's FormData write a name in a Content-Disposition header.
    return name.replace("\r", "%0D").replace("\n", "%0A").replace('"', "%22")


def _multipart(job_field: bytes, inputs: Sequence[Union[str, Tuple[str, str]]], folder: str, field: str = "job"):
    """A multipart/form-data body: the `job` (or `workflow`) field first, then one part per input
    named by its path (or the name given with it: a workflow's NAME/PATH), streamed from disk
    (made again for each try, so that a submit can be sent again)."""
    boundary = "steward-" + uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"\r\n\r\n'.encode("utf-8")
        + job_field
        + b"\r\n"
    )
    parts = []
    for each in inputs:
        part_name, path = (each, each) if isinstance(each, str) else each
        name = _field_name(part_name)
        filename = _field_name(path)
        header = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode("utf-8")
        parts.append((header, os.path.join(folder, path)))
    tail = f"--{boundary}--\r\n".encode("utf-8")

    def make():
        sizes = [os.path.getsize(file) for _, file in parts]
        length = len(head) + sum(len(header) + size + 2 for (header, _), size in zip(parts, sizes)) + len(tail)

        def chunks():
            yield head
            for header, file in parts:
                yield header
                with open(file, "rb") as source:
                    while True:
                        chunk = source.read(FILE_CHUNK)
                        if not chunk:
                            break
                        yield chunk
                yield b"\r\n"
            yield tail

        return chunks(), length

    return make, f"multipart/form-data; boundary={boundary}"

"""Client's submits: a job file or a workflow file sent to the server with its inputs, once it is
durable answered as a handle (steward.Job, steward.Workflow); and the dry run that checks one and
makes nothing. Client (client.py) takes these methods from Submitting."""

import json
import uuid
from typing import Any, Callable, Optional, Sequence, Tuple, Union

from ._job_files import (
    JobSpec,
    _checked_jobs,
    _inputs_to_send,
    _is_workflow,
    _is_workflow_refusal,
    _multipart,
    _read_spec,
    _workflow_inputs,
)
from .errors import Invalid
from .handles import Job, Workflow


class Submitting:
    """The submit and dry-run methods of Client, which gives them its JSON request."""

    # Client's request that answers the decoded JSON body (client.py).
    _json: Callable[..., Any]

    def submit(
        self,
        spec: JobSpec,
        base_dir: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Union[Job, Workflow]:
        """Submits a job, or a workflow, and answers its handle once it is durable: a steward.Job
        (a str, the job's id) or, for a workflow file (a top-level `jobs:`), a steward.Workflow
        (a str, its flow-N id). `spec` is a dict, a file's text (YAML or JSON), or a file's path
        (.yaml, .yml, .json). Its inputs are uploaded from `base_dir`: by default the file's
        folder, or the current folder for a dict or text.

        The submit carries an Idempotency-Key (a fresh one unless given), so a submit whose answer
        was lost is sent again, to the next server too, without making a second job."""
        data, text, folder = _read_spec(spec, base_dir)
        key = idempotency_key or uuid.uuid4().hex
        if _is_workflow(data, text):
            return self._submit_workflow(data, text, folder, key)
        try:
            return Job(self, self._submit_job(data, text, folder, key))
        except Invalid as error:
            # A workflow file this client did not tell (a flow-style `{jobs: ...}`): the server
            # names it so, and made nothing.
            if not _is_workflow_refusal(error):
                raise
            return self._submit_workflow(data, text, folder, key)

    def submit_workflow(
        self,
        spec: JobSpec,
        base_dir: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Workflow:
        """Submits a workflow file (`jobs: {NAME: job file}`, each job's dependsOn naming others
        by NAME): every job is made at once, or none. `spec` as for submit; each job's inputs are
        uploaded from `base_dir` (by default the file's folder). Answers a steward.Workflow."""
        data, text, folder = _read_spec(spec, base_dir)
        return self._submit_workflow(data, text, folder, idempotency_key or uuid.uuid4().hex)

    def _submit_job(self, data: Optional[dict], text: Optional[str], folder: str, key: str) -> str:
        created = self._post_file(
            "/api/v1/jobs",
            "job",
            data,
            text,
            folder,
            key,
            lambda given: _inputs_to_send(given.get("inputs"), folder),
            lambda checked: _inputs_to_send(checked["spec"].get("inputs"), folder),
        )
        return created["id"]

    def _submit_workflow(self, data: Optional[dict], text: Optional[str], folder: str, key: str) -> Workflow:
        created = self._post_file(
            "/api/v1/workflows",
            "workflow",
            data,
            text,
            folder,
            key,
            lambda given: _workflow_inputs(given.get("jobs"), folder),
            lambda checked: _workflow_inputs(_checked_jobs(checked), folder),
        )
        return Workflow(self, created)

    def _post_file(
        self,
        route: str,
        field: str,
        data: Optional[dict],
        text: Optional[str],
        folder: str,
        key: str,
        inputs_of: Callable[[dict], Sequence[Union[str, Tuple[str, str]]]],
        checked_inputs_of: Callable[[dict], Sequence[Union[str, Tuple[str, str]]]],
    ) -> dict:
        """Sends a job or workflow file to `route`: as JSON when it names no inputs, else as the
        multipart `field` with its inputs. No YAML parser here: a YAML file that may name inputs is
        read by the server first (a dry run, which makes nothing) to learn them; one that names none
        goes as its text. `inputs_of(data)` and `checked_inputs_of(dry run's answer)` name them."""
        headers = {"Idempotency-Key": key}
        if data is not None:
            inputs = inputs_of(data)
            if not inputs:
                return self._json("POST", route, payload=data, headers=headers, idempotent=True)
            file_field = json.dumps(data).encode("utf-8")
        else:
            assert text is not None
            file_field = text.encode("utf-8")
            yaml_headers = {"Content-Type": "application/yaml"}
            inputs: Sequence[Union[str, Tuple[str, str]]] = []
            if "inputs" in text:
                checked = self._json("POST", route, {"dryRun": True}, body=file_field, headers=yaml_headers, idempotent=True)
                inputs = checked_inputs_of(checked)
            if not inputs:
                return self._json("POST", route, body=file_field, headers={**yaml_headers, **headers}, idempotent=True)
        body, content_type = _multipart(file_field, inputs, folder, field=field)
        return self._json("POST", route, body=body, headers={"Content-Type": content_type, **headers}, idempotent=True)

    def dry_run(self, spec: JobSpec, base_dir: Optional[str] = None, explain: bool = True) -> dict:
        """Checks a job file as a submit does (the same steward.Invalid naming the field, its
        inputs looked for in `base_dir`) and makes nothing, as `steward submit --dry-run`:
        answers {spec, explanation}, the job file as the server reads it (defaults filled in)
        and what explain() would say of the job submitted now (without `explain`: {spec}).
        A workflow file answers {name, jobs: [{name, dependsOn, spec, explanation}]}, each job's
        file as read, in the order a submit makes them, and what explain() would say of each
        submitted now once what it waits for is done (without `explain`: no explanation)."""
        data, text, folder = _read_spec(spec, base_dir)
        query = {"dryRun": True, "explain": explain or None}
        if data is not None:
            body, headers = json.dumps(data).encode("utf-8"), {"Content-Type": "application/json"}
        else:
            assert text is not None
            body, headers = text.encode("utf-8"), {"Content-Type": "application/yaml"}
        workflow = _is_workflow(data, text)
        if not workflow:
            try:
                checked = self._json("POST", "/api/v1/jobs", query, body=body, headers=headers, idempotent=True)
            except Invalid as error:
                if not _is_workflow_refusal(error):
                    raise
                workflow = True
            else:
                _inputs_to_send(checked["spec"].get("inputs"), folder)
                return checked
        checked = self._json("POST", "/api/v1/workflows", query, body=body, headers=headers, idempotent=True)
        _workflow_inputs(_checked_jobs(checked), folder)
        return checked

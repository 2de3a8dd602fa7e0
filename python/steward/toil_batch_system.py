"""Steward as a Toil batch system (Toil 5.9 and later): `--batchSystem steward`.

Needs Toil (import it only where Toil is installed; the rest of the package stays standard library
only). Each Toil job becomes one Steward job running its command with `bash -c`
(steward.toil_mapping); the jobs' states are asked for all at once (Client.job_states), and
Toil's kills are one cancel request (Client.cancel_jobs). Toil's job store is a folder that
every agent's host must see at the same path: a shared file system is required.

Toil 5.9 finds no batch system outside its own registry, so `register()` adds this one; the entry
points `python3 -m steward.toil_cwl` and `python3 -m steward.toil_wdl` register it, then run Toil's
CWL or WDL runner (docs/workflow-engines.md).
"""

import collections
import logging
import threading
import time
from argparse import ArgumentParser, _ArgumentGroup
from typing import Deque, Dict, List, Optional, Union

from toil.batchSystems.abstractBatchSystem import BatchJobExitReason, UpdatedBatchJobInfo
from toil.batchSystems.cleanup_support import BatchSystemCleanupSupport
from toil.batchSystems.registry import BATCH_SYSTEM_FACTORY_REGISTRY, addBatchSystemFactory

from ._many_jobs import batches
from .client import Client
from .toil_mapping import ENDED_STATES, EXIT_STATUS_UNAVAILABLE, LOST, job_spec, outcome

logger = logging.getLogger(__name__)

NAME = "steward"
DEFAULT_POLL_SECONDS = 2.0


class StewardBatchSystem(BatchSystemCleanupSupport):
    """Toil's jobs as Steward jobs, on the server of STEWARD_URL with STEWARD_TOKEN (as the CLI)."""

    @classmethod
    def supportsAutoDeployment(cls) -> bool:
        # The workflow's code is not shipped to the hosts: they must have it (a shared file system).
        return False

    def __init__(self, config, maxCores: float, maxMemory: int, maxDisk: int) -> None:
        super().__init__(config, maxCores, maxMemory, maxDisk)
        self.client = Client.from_env()
        self.poll_seconds = float(getattr(config, "steward_poll_seconds", None) or DEFAULT_POLL_SECONDS)
        self.qos: Optional[str] = getattr(config, "steward_qos", None) or None
        self.disk_requirement = not getattr(config, "steward_ignore_disk", False)
        self.lock = threading.Lock()
        # Toil's id -> Steward's id, for the jobs issued and not yet reported.
        self.steward_ids: Dict[int, str] = {}
        # Toil's id -> when it was first seen running (time.time()).
        self.running_since: Dict[int, float] = {}
        self.ended: Deque[UpdatedBatchJobInfo] = collections.deque()
        self.last_poll = 0.0

    # ---- issuing and killing

    def issueBatchJob(self, jobDesc, job_environment: Optional[Dict[str, str]] = None) -> int:
        local_id = self.handleLocalJob(jobDesc)
        if local_id is not None:
            return local_id
        self.check_resource_request(jobDesc)
        toil_id = self.getNextJobID()
        environment = dict(self.environment)
        environment.update(job_environment or {})
        spec = job_spec(
            jobDesc.command,
            jobDesc.jobName,
            jobDesc.cores,
            jobDesc.memory,
            jobDesc.disk,
            environment,
            qos=self.qos,
            disk_requirement=self.disk_requirement,
        )
        steward_id = str(self.client.submit(spec))
        with self.lock:
            self.steward_ids[toil_id] = steward_id
        logger.debug("Toil job %d (%s) is Steward job %s", toil_id, jobDesc.jobName, steward_id)
        return toil_id

    def killBatchJobs(self, jobIDs: List[int]) -> None:
        self.killLocalJobs(jobIDs)
        with self.lock:
            named = [(toil_id, self.steward_ids.pop(toil_id)) for toil_id in jobIDs if toil_id in self.steward_ids]
            for toil_id, _ in named:
                self.running_since.pop(toil_id, None)
            killed = {toil_id for toil_id, _ in named}
            self.ended = collections.deque(info for info in self.ended if info.jobID not in killed)
        if named:
            self.client.cancel_jobs([steward_id for _, steward_id in named])

    # ---- what Toil asks

    def getIssuedBatchJobIDs(self) -> List[int]:
        with self.lock:
            return list(self.getIssuedLocalJobIDs()) + list(self.steward_ids)

    def getRunningBatchJobIDs(self) -> Dict[int, float]:
        now = time.time()
        with self.lock:
            running = {toil_id: now - since for toil_id, since in self.running_since.items()}
        running.update(self.getRunningLocalJobIDs())
        return running

    def getUpdatedBatchJob(self, maxWait: int) -> Optional[UpdatedBatchJobInfo]:
        deadline = time.monotonic() + max(0, maxWait)
        while True:
            local = self.getUpdatedLocalJob(0)
            if local:
                return local
            with self.lock:
                if self.ended:
                    return self.ended.popleft()
            if time.monotonic() - self.last_poll >= self.poll_seconds:
                self._poll()
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            time.sleep(min(remaining, 0.2, self.poll_seconds))

    def _poll(self) -> None:
        """Asks every tracked job's state in one request (per 1000 jobs); an ended job is read
        once for its last attempt's exit code."""
        self.last_poll = time.monotonic()
        with self.lock:
            tracked = dict(self.steward_ids)
        by_steward = {steward_id: toil_id for toil_id, steward_id in tracked.items()}
        for steward_id, state in self.client.job_states(list(by_steward)).items():
            toil_id = by_steward[steward_id]
            if state == "running":
                with self.lock:
                    if toil_id in self.steward_ids:
                        self.running_since.setdefault(toil_id, time.time())
            elif state is None or state in ENDED_STATES:
                self._report(toil_id, steward_id, state)

    def _report(self, toil_id: int, steward_id: str, state: Optional[str]) -> None:
        if state is None:
            # Removed behind Toil's back: its outcome is unknown.
            code, reason, wall = EXIT_STATUS_UNAVAILABLE, LOST, None
        else:
            code, reason, wall = outcome(self.client.job(steward_id, tasks=True, events=False))
        with self.lock:
            if self.steward_ids.pop(toil_id, None) is None:
                return  # killed meanwhile: Toil is not told of it
            self.running_since.pop(toil_id, None)
            self.ended.append(UpdatedBatchJobInfo(toil_id, code, BatchJobExitReason[reason], wall))
        logger.debug("Steward job %s (Toil's %d) ended %s, exit status %d", steward_id, toil_id, state, code)

    # ---- the rest of the contract

    def shutdown(self) -> None:
        self.shutdownLocal()
        with self.lock:
            left = list(self.steward_ids.values())
            self.steward_ids.clear()
            self.running_since.clear()
        for some in batches(left):
            try:
                self.client.cancel_jobs(some)
            except Exception as error:  # shutting down: say it, do not mask what ended the run
                logger.warning("Could not cancel Steward jobs %s: %s", ",".join(some), error)

    def getSchedulingStatusMessage(self) -> Optional[str]:
        with self.lock:
            waiting = len(self.steward_ids) - len(self.running_since)
        return f"{waiting} Steward jobs not running yet: `steward explain ID` says why" if waiting > 0 else None

    @classmethod
    def add_options(cls, parser: Union[ArgumentParser, _ArgumentGroup]) -> None:
        parser.add_argument(
            "--stewardQos",
            dest="steward_qos",
            default=None,
            help="The Steward QoS tier of the jobs (the job file's qos). (default: the server's)",
        )
        parser.add_argument(
            "--stewardPollSeconds",
            dest="steward_poll_seconds",
            default=None,
            help=f"Seconds between two asks of the jobs' states. (default: {DEFAULT_POLL_SECONDS})",
        )
        parser.add_argument(
            "--stewardIgnoreDisk",
            dest="steward_ignore_disk",
            action="store_true",
            default=False,
            help="Do not require a job's disk as free disk on its host (host.diskFreeMb).",
        )

    @classmethod
    def setOptions(cls, setOption) -> None:
        setOption("steward_qos", default=None, env=["TOIL_STEWARD_QOS"])
        setOption("steward_poll_seconds", float, default=DEFAULT_POLL_SECONDS, env=["TOIL_STEWARD_POLL_SECONDS"])
        setOption("steward_ignore_disk", bool, default=False)


def _factory():
    return StewardBatchSystem


def register() -> None:
    """Adds `steward` to Toil's batch systems (once), so that `--batchSystem steward` names it."""
    if NAME not in BATCH_SYSTEM_FACTORY_REGISTRY:
        addBatchSystemFactory(NAME, _factory)

"""`python3 -m steward.toil_wdl WORKFLOW.wdl INPUTS.json ARGS`: Toil 5.9's toil-wdl-runner, with
Steward's batch system registered and Toil's options (`--batchSystem steward` ...) obeyed.

Toil 5.9's toil-wdl-runner compiles the WDL workflow into a Python script, then runs that script in
a new Python process with the arguments it did not know itself. The script never reads them: it
builds its options from `Job.Runner.getDefaultOptions(JOBSTORE)`, which parses the job store alone,
so every run is on Toil's default batch system (`single_machine`), whatever `--batchSystem` says.
This runs the same program with two differences: the compiled script runs in this process, where
`steward` is registered; and `Job.Runner.getDefaultOptions` parses the arguments passed on, after
the job store, as toil-cwl-runner parses its own:

    python3 -m steward.toil_wdl workflow.wdl inputs.json --jobStore /shared/js -o /shared/out \
        --batchSystem steward --workDir /shared/work

The job store, the work folders and the output folder (where the compiled script is written, and
where each Toil worker imports it from) must be on a file system every agent's host mounts at the
same path (docs/workflow-engines.md).
"""

import runpy
import sys
from argparse import Namespace
from typing import List, Sequence

from .toil_batch_system import register


def run_compiled(script: str, toil_args: Sequence[str]) -> None:
    """Runs the script toil-wdl-runner compiled, in this process, its Toil options `toil_args`."""
    from toil.job import Job

    def options_with_arguments(job_store: str) -> Namespace:
        return Job.Runner.getDefaultArgumentParser().parse_args([job_store, *toil_args])

    Job.Runner.getDefaultOptions = staticmethod(options_with_arguments)
    saved_argv = sys.argv
    sys.argv = [script, *toil_args]
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = saved_argv


class CompiledScriptHere:
    """Stands for the `subprocess` module in toil.wdl.toilwdl, whose one call runs the compiled
    script: `check_call([python, SCRIPT, *ARGS])`."""

    @staticmethod
    def check_call(command: List[str]) -> int:
        run_compiled(command[1], command[2:])
        return 0


def main() -> int:
    register()
    from toil.wdl import toilwdl

    toilwdl.subprocess = CompiledScriptHere  # type: ignore[assignment]
    toilwdl.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())

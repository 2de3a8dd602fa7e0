"""`python3 -m steward.toil_cwl ARGS`: toil-cwl-runner with Steward's batch system registered.

Toil 5.9 reaches only the batch systems of its own registry, so plain `toil-cwl-runner
--batchSystem steward` refuses the name; this runs the same program once `steward` is added:

    python3 -m steward.toil_cwl --batchSystem steward --jobStore /shared/js workflow.cwl inputs.yml

The job store, the work folders and the outputs must be on a file system every agent's host
mounts at the same path (docs/workflow-engines.md).
"""

import sys

from .toil_batch_system import register


def main() -> int:
    register()
    from toil.cwl.cwltoil import main as cwl_main

    return cwl_main()


if __name__ == "__main__":
    sys.exit(main())

// What a heartbeat may decide, once its soft state is noted (state/soft-state.ts): a pilot near its
// walltime moves its attempts off, a job's requirements file may move it, a broken performance
// contract migrates an attempt.

import type { HeartbeatMessage } from "../../../common/protocol/messages.ts";
import type { Step } from "../step.ts";
import { watchContracts } from "./contracts.ts";
import { followRequirementsFiles } from "./requirements-file.ts";
import { leaveBeforeWalltime, walltimeDue } from "./walltime.ts";

export function heartbeatReported(
  step: Step,
  hostName: string,
  progress: HeartbeatMessage["progress"],
  requirements: HeartbeatMessage["requirements"],
  walltimeMarginSeconds: number,
): void {
  if (walltimeDue(step, hostName, walltimeMarginSeconds))
    leaveBeforeWalltime(step, hostName, walltimeMarginSeconds);
  followRequirementsFiles(step, hostName, requirements);
  watchContracts(step, hostName, progress);
}

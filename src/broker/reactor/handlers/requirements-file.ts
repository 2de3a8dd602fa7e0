// Self-migration (GridWay's dynamic requirement files): a running job writes new requirements into
// $STEWARD_REQUIREMENTS_FILE; the agent sends the text with its heartbeats. Each distinct text an
// attempt sends is acted on once: one that does not compile (or is not a boolean over the host
// facts, as at submit) is reported in the job's events and ignored; a valid one replaces the job's
// requirements for its later placements (committed on the job, so a restart keeps it), and every
// running attempt of the job whose host no longer satisfies them migrates, with its checkpoint.

import { checkExpression, evaluateRequirement } from "../../../common/model/cel.ts";
import { type HeartbeatMessage, REQUIREMENTS_MAX_CHARS } from "../../../common/protocol/messages.ts";
import type { StopEntry } from "../../scheduler/view.ts";
import { reportedAttempts } from "../../state/host-entry.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { applyStops } from "./apply-plan.ts";

export function followRequirementsFiles(
  step: Step,
  hostName: string,
  reports: HeartbeatMessage["requirements"],
): void {
  const { state } = step;
  for (const { report, key, live } of reportedAttempts(state.hosts.get(hostName), reports)) {
    const { job, attempt } = live;
    if (attempt.state === "stopping" || job.record.cancelRequested) continue;
    const text = report.text.trim();
    // An empty file is one being written, or one the job has not used yet.
    if (text === "") continue;
    if (state.watches.get(key)?.requirementsText === text) continue;
    step.onRollback(state.watches.restorer(key));
    state.watches.watch(key).requirementsText = text;
    const where = { task: attempt.taskIndex, attempt: attempt.number, host: attempt.host };
    const problem =
      text.length > REQUIREMENTS_MAX_CHARS
        ? `longer than ${REQUIREMENTS_MAX_CHARS} characters`
        : checkExpression(text, "requirements");
    if (problem !== null) {
      if (!job.refuseRequirements(text)) continue;
      step.onRollback(() => job.refusalTakenBack(text));
      step.event(job, {
        kind: "requirements.refused",
        data: { ...where, requirements: text.slice(0, REQUIREMENTS_MAX_CHARS), error: problem },
      });
      continue;
    }
    const previous = job.record.dynamicRequirements ?? job.record.spec.requirements ?? null;
    if (text === previous) continue;
    step.write.setDynamicRequirements(job, text);
    step.event(job, {
      kind: "requirements.changed",
      data: { ...where, requirements: text, previous, array: job.tasks.length > 1 },
    });
    migrateUnsatisfied(step, job, text);
  }
}

/** Moves the job's running attempts off hosts that no longer satisfy its requirements. */
function migrateUnsatisfied(step: Step, job: JobEntry, text: string): void {
  const requirements = job.requirements;
  if (!requirements) return;
  const stops: StopEntry[] = [];
  for (const attempt of job.allLiveAttempts()) {
    if (attempt.state !== "starting" && attempt.state !== "running") continue;
    const host = step.state.hosts.get(attempt.host);
    if (!host) continue;
    const result = evaluateRequirement(requirements, host.facts);
    if (result.ok) continue;
    stops.push({
      jobId: job.id,
      taskIndex: attempt.taskIndex,
      attempt: attempt.number,
      intent: { outcome: "migrated", reason: { kind: "requirements-changed", requirements: text } },
      migrateTo: { to: null },
    });
    step.event(job, {
      kind: "requirements.migrate",
      data: {
        task: attempt.taskIndex,
        attempt: attempt.number,
        host: attempt.host,
        requirements: text,
        why: result.reason,
        array: job.tasks.length > 1,
      },
    });
  }
  if (stops.length > 0) applyStops(step, stops);
}

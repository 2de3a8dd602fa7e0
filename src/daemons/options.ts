// The parsers and shared flags of the daemons' command lines (server, agent, up): labels, countable
// resources, GPUs, shared folders, a pilot's walltime end, the metascheduling policy, and shutdown
// on a signal.

import { type Stats, statSync } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { parseGpuList } from "../agent/host/gpus.ts";
import {
  DISCOVERY_SECONDS,
  PREEMPT_MIN_PROGRESS,
  PREEMPT_WAIT_SECONDS,
  RESCHEDULE_GAIN,
} from "../broker/scheduler/policy.ts";
import { GANG_RESERVE_SECONDS } from "../broker/scheduler/stages/gang.ts";
import type { MetaschedulingPolicy } from "../broker/scheduler/view.ts";
import { WALLTIME_MARGIN_SECONDS } from "../broker/scheduler/walltime.ts";
import { number } from "../common/command-line/numbers.ts";
import { ASSUMED_MAX_SHARED_FOLDERS } from "../common/model/cel-cost.ts";
import { absoluteFolderProblem, normalFolder } from "../common/model/shared-folders.ts";

export function labels(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const match = /^([^=]+)=(.*)$/.exec(value);
  if (!match) throw new InvalidArgumentError(`--label needs key=value, not ${value}`);
  return { ...previous, [match[1]]: match[2] };
}

/** `--resource name=N` (repeatable): units of a countable resource the host offers. */
export function countableResources(
  value: string,
  previous: Record<string, number> = {},
): Record<string, number> {
  const match = /^([A-Za-z][A-Za-z0-9_]{0,63})=(\d+)$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError(`--resource needs name=count (license=4), not ${value}`);
  return { ...previous, [match[1]]: Number(match[2]) };
}

/**
 * `--shared PATH` (repeatable): a folder this host shares with the others (a job's `workdir` runs
 * in place on a host sharing a folder that holds it). Absolute, without `..`, and a folder that is
 * there when the agent starts: anything else is refused naming the path. Kept normalised
 * (`/data/` is `/data`), each once, at most ASSUMED_MAX_SHARED_FOLDERS.
 */
export function sharedFolder(value: string, previous: string[] = []): string[] {
  const problem = absoluteFolderProblem(value);
  if (problem) throw new InvalidArgumentError(`--shared ${value}: ${problem}`);
  const folder = normalFolder(value);
  let info: Stats | undefined;
  try {
    info = statSync(folder);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InvalidArgumentError(
      `--shared ${value}: ${code === "ENOENT" ? "no such folder" : (error as Error).message} (a shared folder must be there when the agent starts: is it mounted?)`,
    );
  }
  if (!info.isDirectory()) throw new InvalidArgumentError(`--shared ${value}: not a folder`);
  if (previous.includes(folder)) return previous;
  if (previous.length >= ASSUMED_MAX_SHARED_FOLDERS)
    throw new InvalidArgumentError(`--shared: at most ${ASSUMED_MAX_SHARED_FOLDERS} folders`);
  return [...previous, folder];
}

/** `--gpus`: auto, or device indexes (0,1,3), checked here and detected or listed at start. */
export function gpuSetting(value: string): string {
  if (value.trim() === "auto") return "auto";
  try {
    return parseGpuList(value).join(",");
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** `--ends-at`: an ISO-8601 time or seconds since the epoch, as ms since the epoch. */
export function endsAt(value: string): number {
  const ms = /^\d+(\.\d+)?$/.test(value) ? Number(value) * 1000 : Date.parse(value);
  if (!Number.isFinite(ms) || ms <= 0)
    throw new InvalidArgumentError(
      `--ends-at needs an ISO-8601 time or seconds since the epoch, not ${value}`,
    );
  return Math.round(ms);
}

/** SIGINT/SIGTERM: close cleanly once; a second signal exits at once. */
export function onShutdown(close: () => Promise<void>): void {
  let closing = false;
  const handler = (signal: string) => {
    if (closing) process.exit(130);
    closing = true;
    process.stderr.write(`steward: ${signal}, shutting down\n`);
    close().then(
      () => process.exit(0),
      (error) => {
        process.stderr.write(`steward: shutdown failed: ${error}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}

function fraction(flag: string) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < 0 || parsed > 1)
      throw new InvalidArgumentError(`${flag} needs a number from 0 to 1, not ${value}`);
    return parsed;
  };
}

/** The metascheduling flags of `server` and `up`, with the papers' values as defaults. */
export function policyOptions(command: Command): Command {
  return command
    .option(
      "--preempt-wait-seconds <s>",
      "wait instead of preempting when a running task that would make room ends within this",
      number("--preempt-wait-seconds"),
      PREEMPT_WAIT_SECONDS,
    )
    .option(
      "--preempt-min-progress <f>",
      "a task may be preempted after this progress since its start or last preemption",
      fraction("--preempt-min-progress"),
      PREEMPT_MIN_PROGRESS,
    )
    .option("--no-preempt", "never stop a running task for a higher-priority one")
    .option(
      "--reschedule-gain <f>",
      "move a running task only when the estimated gain passes this",
      fraction("--reschedule-gain"),
      RESCHEDULE_GAIN,
    )
    .option(
      "--discovery-seconds <s>",
      "how often running tasks are held against better hosts",
      number("--discovery-seconds"),
      DISCOVERY_SECONDS,
    )
    .option("--no-reschedule", "never move a running task to a better host")
    .option(
      "--walltime-margin-seconds <s>",
      "pilots take no work, and their tasks migrate, this long before their walltime",
      number("--walltime-margin-seconds"),
      WALLTIME_MARGIN_SECONDS,
    )
    .option(
      "--gang-reserve-seconds <s>",
      "a multi-node job waiting longer than this gets hosts reserved for it as they free up",
      number("--gang-reserve-seconds"),
      GANG_RESERVE_SECONDS,
    )
    .option("--restart-pool <pool>", "the pool kept for replacing failed ranks of multi-node jobs");
}

export interface PolicyFlags {
  preemptWaitSeconds: number;
  preemptMinProgress: number;
  preempt: boolean;
  rescheduleGain: number;
  discoverySeconds: number;
  reschedule: boolean;
  walltimeMarginSeconds: number;
  gangReserveSeconds: number;
  restartPool?: string;
}

export function policyFrom(flags: PolicyFlags): Partial<MetaschedulingPolicy> {
  return {
    preempt: flags.preempt,
    preemptWaitSeconds: flags.preemptWaitSeconds,
    preemptMinProgress: flags.preemptMinProgress,
    reschedule: flags.reschedule,
    rescheduleGain: flags.rescheduleGain,
    discoverySeconds: flags.discoverySeconds,
    walltimeMarginSeconds: flags.walltimeMarginSeconds,
    gangReserveSeconds: flags.gangReserveSeconds,
    restartPool: flags.restartPool ?? null,
  };
}

// The server's fair-share flags (`steward server` and `steward up`): `--shares FILE`, the tree of
// accounts with their shares (common/model/shares-file.ts), and `--fair-share-half-life DURATION`,
// how fast past usage fades (7d, 36h, 3600s; a bare number is seconds).

import { type Command, InvalidArgumentError, Option } from "commander";
import { FAIR_SHARE_HALF_LIFE_SECONDS } from "../broker/scheduler/fair-share.ts";
import type { FairShareSettings } from "../broker/state/owner-usage.ts";
import { parseSharesFile, SharesFileError } from "../common/model/shares-file.ts";
import { parseLifetime } from "../common/model/tokens.ts";
import { readFlagFile } from "./flag-file.ts";

export interface FairShareFlags {
  shares?: string;
  fairShareHalfLife: number;
}

/** A duration such as 7d, 36h, 90m or 3600s (a bare number: seconds), in seconds. */
export function halfLifeSeconds(value: string): number {
  const ms = parseLifetime(value);
  if (ms === null)
    throw new InvalidArgumentError(
      `--fair-share-half-life needs a duration such as 7d, 36h, 90m or 3600s, not ${value}`,
    );
  return ms / 1000;
}

export function fairShareOptions(command: Command): Command {
  return command
    .option(
      "--shares <file>",
      "the fair-share tree (YAML): accounts with their shares, their users and sub-accounts; default: every user one share",
    )
    .addOption(
      new Option(
        "--fair-share-half-life <duration>",
        "past usage counts half as much after this long (7d, 36h, 3600s)",
      )
        .argParser(halfLifeSeconds)
        .default(FAIR_SHARE_HALF_LIFE_SECONDS, "7d"),
    );
}

/** The fair-share settings of the flags; a bad shares file stops the server with the field named. */
export function fairShareFrom(flags: FairShareFlags): Partial<FairShareSettings> {
  const settings: Partial<FairShareSettings> = { halfLifeSeconds: flags.fairShareHalfLife };
  if (flags.shares === undefined) return settings;
  return { ...settings, tree: readFlagFile("--shares", flags.shares, parseSharesFile, SharesFileError) };
}

// What an agent is started with (`steward agent`'s flags, `steward up`'s own agents), and the
// address other hosts reach it at by default.

import os from "node:os";
import type { Logger } from "pino";
import type { LinkSocket } from "../common/protocol/local-link.ts";
import type { RunAs } from "./accounts/run-as.ts";

export interface AgentOptions {
  servers: string[];
  joinToken: string;
  name?: string;
  pool?: string;
  slots?: number;
  workDir: string;
  labels?: Record<string, string>;
  speed?: number;
  log: Logger;
  /** Called when the server refuses this agent for good (a wrong join token). */
  onRejected?: (reason: string) => void;
  /** The server speaks another protocol version: the agent has stopped, `message` names both. */
  onIncompatible?: (message: string) => void;
  /** A pilot's agent leaves after this many seconds with no attempt (the pool's idleSeconds). */
  idleSeconds?: number;
  /** Called once the agent has been idle for idleSeconds (it has already let go of the server). */
  onIdle?: () => void;
  /** A pilot's walltime end (ms since the epoch): told to the server, which moves work away before it. */
  endsAt?: number;
  /** Where other hosts reach this one (multi-node jobs); default: its first external IPv4 address. */
  address?: string;
  /** Whom jobs run as (--run-as, --run-as-owner; see run-as.ts); default: the agent's own account. */
  runAs?: RunAs;
  /**
   * The umask jobs start with: the one the agent was started with, which the daemons tighten to
   * 077 for their own files (daemons/private-folder.ts). Default: the agent's own at the time.
   */
  jobUmask?: number;
  /** Enforce attempts' memory, CPU and process limits with cgroups where the host allows (default true; --no-enforce). */
  enforce?: boolean;
  /** `--gpus`: `auto` or device indexes (0,1,3); absent: none. */
  gpus?: string;
  /** `--cache-gb`: the content cache's capacity, GiB (default DEFAULT_CACHE_GB; 0: off, each task fetches its own copy). */
  cacheGb?: number;
  /** `--min-free-disk-mb`: the work folder is full below this (default: host/disk-space.ts's rule). */
  minFreeDiskMb?: number;
  /** `--resource name=N`: countable resources offered to jobs. */
  resources?: Record<string, number>;
  /** `--shared PATH`: folders this host shares with the others, checked and normalised (daemons/options.ts). */
  shared?: string[];
  /** `--container-runtime PATH`: the OCI runtime containers run with (absent: runc on PATH; docs/containers.md). */
  containerRuntime?: string;
  /**
   * A link to a server in this process (`steward up`'s own agents), used instead of a WebSocket to
   * `servers` (which still serve the files: inputs, outputs, checkpoints).
   */
  localLink?: () => LinkSocket;
}

/** The host's first external IPv4 address, or the loopback when it has none. */
export function defaultAddress(): string {
  for (const list of Object.values(os.networkInterfaces()))
    for (const each of list ?? []) if (each.family === "IPv4" && !each.internal) return each.address;
  return "127.0.0.1";
}

// What an agent sends, as tests write it: its facts, its hello, an attempt's end.

import type { HostFacts } from "../../src/common/model/host-facts.ts";
import type { HelloMessage } from "../../src/common/protocol/messages.ts";

export function facts(name: string, overrides: Partial<HostFacts> = {}): HostFacts {
  return {
    name,
    pool: "default",
    os: "linux",
    arch: "x86_64",
    cpus: 4,
    memoryMb: 8000,
    memFreeMb: 8000,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 1000,
    speed: 1,
    labels: {},
    slotsFree: 4,
    ...overrides,
  };
}

export function hello(name: string, attempts: HelloMessage["attempts"] = [], slots = 2): HelloMessage {
  return {
    type: "hello",
    v: 1,
    name,
    token: "j",
    pool: "default",
    slots,
    labels: {},
    facts: facts(name),
    attempts,
  };
}

export function ended(
  jobId: string,
  attempt: number,
  outcome: "succeeded" | "failed" | "lost" | "preempted" | "migrated" | "cancelled" = "succeeded",
  extra: { reason?: string; cause?: "host" | "staging" | "oom"; taskIndex?: number } = {},
) {
  return {
    kind: "ended" as const,
    jobId,
    taskIndex: extra.taskIndex ?? 0,
    attempt,
    outcome,
    exitCode: outcome === "succeeded" ? 0 : outcome === "failed" ? 1 : null,
    reason: extra.reason ?? null,
    outputs: [],
    ...(extra.cause ? { cause: extra.cause } : {}),
  };
}

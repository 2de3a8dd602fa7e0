// Telling an attempt's job from a process that reused its pid. The compiled launcher writes the
// job's start time (from /proc) under its pid at once. The perl launcher and the shell supervisor
// record only the pid (a shell reads /proc one byte a call: some 300 system calls a task); the
// agent, told the job started, reads the job's start time from /proc in one call and adds it to
// the pid file. Should the agent go down before it could, the pid file's time stands in: the job
// started before its supervisor wrote the pid, a process that reused the pid after.

import { closeSync, openSync, readFileSync, readSync } from "node:fs";

/** Clock ticks a second in /proc's times (USER_HZ: 100 on every architecture Linux runs agents on). */
export const PROC_TICKS_PER_SECOND = 100;

/** What the agent needs of /proc/PID/stat. */
export interface ProcStat {
  /** R, S, D, Z, T… */
  state: string;
  /** When the process started, in clock ticks since boot (field 22), as /proc writes it. */
  startTicks: string;
}

/** The fields of a /proc/PID/stat line; the command name (field 2) may hold spaces and parentheses. */
export function parseProcStat(line: string): ProcStat | null {
  const close = line.lastIndexOf(")");
  if (close < 0) return null;
  const fields = line.slice(close + 2).split(" ");
  // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
  const startTicks = fields[19];
  if (!fields[0] || !startTicks || !/^\d+$/.test(startTicks)) return null;
  return { state: fields[0], startTicks };
}

/** A stat line is a few hundred bytes: one read into this. */
const statBuffer = Buffer.alloc(4096);

/** /proc/PID/stat of a live (or not yet reaped) process, or null when there is none. */
export function readProcStat(pid: number): ProcStat | null {
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/stat`, "r");
  } catch {
    return null;
  }
  try {
    const length = readSync(fd, statBuffer, 0, statBuffer.length, 0);
    return parseProcStat(statBuffer.toString("latin1", 0, length));
  } catch {
    // Gone between the open and the read.
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Sends `signal` to the process group `pid` leads; false when there is none. Most often there is
 * none (a short job's group is gone when it ends): the error that says so is made without the
 * stack trace that would cost more than the signal.
 */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  } finally {
    Error.stackTraceLimit = limit;
  }
}

let bootMs: number | null = null;

/** When the host booted (ms since the epoch, to the second), from /proc/stat's btime. */
export function bootTimeMs(): number {
  if (bootMs === null) {
    const match = /^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"));
    bootMs = match ? Number(match[1]) * 1000 : 0;
  }
  return bootMs;
}

export interface JobIdentity {
  /** The start time recorded beside the pid, or null when none was. */
  recordedStartTicks: string | null;
  /** When the supervisor wrote the pid file (its mtime, ms). */
  pidWrittenMs: number;
  bootMs: number;
}

/**
 * Whether the process now holding the job's pid is still the job: not a zombie, and started when
 * the job did. Without a recorded start time, a process that started after the pid was written is
 * another one (the boot time is known to the second only: that much earlier counts as the job).
 */
export function isSameJob(found: ProcStat | null, identity: JobIdentity): boolean {
  if (!found || found.state === "Z") return false;
  if (identity.recordedStartTicks !== null) return found.startTicks === identity.recordedStartTicks;
  const startedMs = identity.bootMs + (Number(found.startTicks) * 1000) / PROC_TICKS_PER_SECOND;
  return startedMs <= identity.pidWrittenMs;
}

/**
 * The pid file: the supervisor's `PID` line, then the agent's `START` line. An older supervisor
 * wrote both on one line (`PID START`): read too, so that an agent upgraded while its jobs run
 * still knows them.
 */
export function parsePidFile(text: string): { pid: number | null; startTicks: string | null } {
  const [first = "", second = ""] = text.split("\n");
  const [pid, startOnFirstLine] = first.trim().split(" ");
  const start = second.trim() || startOnFirstLine || null;
  return { pid: Number(pid) || null, startTicks: start && /^\d+$/.test(start) ? start : null };
}

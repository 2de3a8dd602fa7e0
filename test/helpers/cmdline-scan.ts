// Watches every process's command line (/proc/PID/cmdline, which any account may read) for some
// strings, until SIGTERM; then prints what it found as one JSON line: { scans, hits }, hits by
// string, each the command lines that held it. The strings come in its environment (SCAN_NEEDLES,
// one a line), never on its own command line. Run as a process of its own (a tight synchronous
// loop): a full scan of /proc takes a few milliseconds, and a command line that is exec'd over at
// once (setpriv, env) lives less than that, so between full scans it watches each process made
// since it started (the pids up to /proc/sys/kernel/ns_last_pid) for its first seconds, through a
// descriptor opened as soon as the process is there, which reads its command line after each exec.

import { closeSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";

interface Young {
  fd: number;
  seen: number;
}

const needles = (process.env.SCAN_NEEDLES ?? "").split("\n").filter(Boolean);
const hits = new Map<string, Set<string>>(needles.map((needle) => [needle, new Set()]));
/** Pids seen at start: only their command lines at full scans (they are not starting up). */
const old = new Set<number>();
/** Pids made since the start, with when they were first seen: read on every round for a while. */
const young = new Map<number, Young>();
const YOUNG_MS = 2000;
/** Between full scans (each takes milliseconds, during which nothing else is read). */
const FULL_SCAN_EVERY_MS = 100;
let scans = 0;
let stopping = false;
let lastFull = 0;
const PID_MAX = Number(readFileSync("/proc/sys/kernel/pid_max", "latin1"));
let last = 0;

process.on("SIGTERM", () => {
  stopping = true;
});

const buffer = Buffer.alloc(1 << 20);

function note(text: string): void {
  for (const needle of needles)
    if (text.includes(needle)) hits.get(needle)?.add(text.replaceAll("\0", " ").trim());
}

function check(pid: number): void {
  try {
    note(readFileSync(`/proc/${pid}/cmdline`, "latin1"));
  } catch {}
}

/** Reads a young process's command line through the file it opened once: one call each time. */
function reread(process: Young): void {
  try {
    const length = readSync(process.fd, buffer, 0, buffer.length, 0);
    note(buffer.toString("latin1", 0, length));
  } catch {}
}

function watch(pid: number, now: number): void {
  if (young.has(pid)) return;
  let fd: number;
  try {
    // The file stands for the process, not its program: read after an exec, it gives the new
    // command line.
    fd = openSync(`/proc/${pid}/cmdline`, "r");
  } catch {
    return;
  }
  young.set(pid, { fd, seen: now });
}

function fullScan(now: number): void {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (scans === 0) old.add(pid);
    else if (!old.has(pid)) watch(pid, now);
    check(pid);
  }
  scans++;
}

/** The last pid the kernel handed out: the processes made since are read on every round. */
function lastPid(): number {
  try {
    return Number(readFileSync("/proc/sys/kernel/ns_last_pid", "latin1"));
  } catch {
    return last;
  }
}

function round(now: number): void {
  const newest = lastPid();
  // One after another, up to the kernel's pid_max, then from the low numbers again.
  for (let pid = last + 1; pid !== newest + 1; pid = pid >= PID_MAX ? 2 : pid + 1) watch(pid, now);
  last = newest;
  for (const [pid, process] of young) {
    reread(process);
    if (now - process.seen > YOUNG_MS) {
      closeSync(process.fd);
      young.delete(pid);
      old.add(pid);
    }
  }
}

last = lastPid();
fullScan(Date.now());
// Signals are delivered between turns of the event loop: the loop yields now and then.
function spin(): void {
  const until = Date.now() + 50;
  while (Date.now() < until) {
    const now = Date.now();
    if (now - lastFull >= FULL_SCAN_EVERY_MS) {
      fullScan(now);
      lastFull = now;
    }
    round(now);
  }
  if (stopping) {
    const found = Object.fromEntries([...hits].map(([needle, lines]) => [needle, [...lines]]));
    process.stdout.write(`${JSON.stringify({ scans, hits: found })}\n`);
    process.exit(0);
  }
  setImmediate(spin);
}
process.stdout.write("ready\n");
spin();

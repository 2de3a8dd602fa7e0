// `systemd-analyze security` of deploy/systemd's units (offline, where the installed systemd can;
// ExecStart pointed at this checkout's bin/steward), printed for both. The broker's unit is rated
// MEDIUM or better and has the sandboxing a network service without privileges should have:
// no capabilities, a system call filter, its socket families, no namespaces, kernel logs, clock
// and host name out of reach. The agent's unit, which runs jobs as their owners and which every
// job inherits, keeps what it may: kernel logs and host name out of reach.

import { execFile, execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { cleanup, ROOT, STEWARD, tempDir } from "../helpers/steward.ts";

const UNITS = join(ROOT, "deploy", "systemd");
const work = tempDir("steward-units-security-");
afterAll(() => cleanup(work));

/** systemd-analyze's levels, best first. */
const LEVELS = ["PERFECT", "SAFE", "OK", "MEDIUM", "EXPOSED", "UNSAFE"];

/** Why `systemd-analyze security --offline=yes` cannot run here, or null. */
function unsupported(): string | null {
  try {
    const version = Number(
      /systemd (\d+)/.exec(execFileSync("systemd-analyze", ["--version"], { encoding: "utf8" }))?.[1],
    );
    return version >= 250
      ? null
      : `systemd ${version} has no systemd-analyze security --offline (250 or later)`;
  } catch {
    return "systemd-analyze is not installed";
  }
}

function analyze(unit: string): Promise<string> {
  const text = readFileSync(join(UNITS, unit), "utf8").replaceAll("/usr/local/bin/steward", STEWARD);
  writeFileSync(join(work, unit), text);
  return new Promise((done) =>
    execFile(
      "systemd-analyze",
      ["security", "--offline=yes", "--no-pager", join(work, unit)],
      { env: { ...process.env, SYSTEMD_COLORS: "0" } },
      (_error, stdout, stderr) => done(stdout + stderr),
    ),
  );
}

/** The figure and level of the report's last line (`Overall exposure level for X: 1.8 OK`). */
function exposure(report: string): { figure: number; level: string } {
  const match = /Overall exposure level for \S+: ([\d.]+) ([A-Z]+)/.exec(report);
  if (!match) throw new Error(`no overall exposure in:\n${report}`);
  return { figure: Number(match[1]), level: match[2] };
}

/** Whether the report marks the setting as done (✓). */
const holds = (report: string, setting: string) =>
  report.split("\n").some((line) => line.startsWith("✓") && line.slice(1).trim().startsWith(setting));

const why = unsupported();

it.skipIf(why !== null && !process.env.CI)(
  `systemd-analyze security of the units${why ? ` (${why})` : ""}`,
  async () => {
    if (why) throw new Error(why);
    const server = await analyze("steward-server.service");
    const agent = await analyze("steward-agent.service");
    const figures = { server: exposure(server), agent: exposure(agent) };
    console.log(`${server}\n${agent}`);
    console.log(
      `exposure: steward-server.service ${figures.server.figure} ${figures.server.level}, steward-agent.service ${figures.agent.figure} ${figures.agent.level}`,
    );
    expect(LEVELS.indexOf(figures.server.level)).toBeGreaterThanOrEqual(0);
    expect(LEVELS.indexOf(figures.server.level)).toBeLessThanOrEqual(LEVELS.indexOf("MEDIUM"));
    for (const setting of [
      "CapabilityBoundingSet=~CAP_SYS_ADMIN",
      "CapabilityBoundingSet=~CAP_SET(UID|GID|PCAP)",
      "SystemCallFilter=~@clock",
      "SystemCallFilter=~@mount",
      "SystemCallFilter=~@debug",
      "RestrictAddressFamilies=~AF_PACKET",
      "RestrictAddressFamilies=~…",
      "RestrictNamespaces=~user",
      "RestrictNamespaces=~net",
      "ProtectKernelLogs=",
      "ProtectClock=",
      "ProtectHostname=",
      "SystemCallArchitectures=",
    ])
      expect(holds(server, setting), `steward-server.service: ${setting}`).toBe(true);
    for (const setting of [
      "ProtectKernelLogs=",
      "ProtectHostname=",
      "ProtectKernelTunables=",
      "ProtectKernelModules=",
    ])
      expect(holds(agent, setting), `steward-agent.service: ${setting}`).toBe(true);
  },
);

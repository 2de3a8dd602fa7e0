// What the agent tells launcher.c and launcher.pl and reads back from any launcher, as pure functions;
// which launcher it chooses.

import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import {
  chooseLauncher,
  compiledLauncher,
  encodeLaunch,
  parseLauncherLines,
} from "../../../../src/agent/launcher/launcher.ts";

describe("encodeLaunch", () => {
  it.each([
    [
      "a job of the agent's own account, every field",
      {
        dir: "/w/attempts/j1.0.1",
        times: true,
        exec: {
          cwd: "/w/attempts/j1.0.1/run",
          umask: 0o22,
          cgroupProcs: ["/sys/fs/cgroup/memory/s/j1.0.1/cgroup.procs"],
          env: { A: "x=y", NL: "a\nb" },
          argv: ["/bin/sh", "-c", "echo 'hi'"],
        },
      },
      [
        "j1.0.1",
        "1",
        "exec",
        "/w/attempts/j1.0.1/run",
        "0022",
        "1",
        "/sys/fs/cgroup/memory/s/j1.0.1/cgroup.procs",
        "2",
        "A=x=y",
        "NL=a\nb",
        "/bin/sh",
        "-c",
        "echo 'hi'",
      ],
    ],
    [
      "no umask, no cgroup, no variables, an empty argument",
      {
        dir: "/w/attempts/j2.3.1",
        times: false,
        exec: { cwd: "/r", cgroupProcs: [], env: {}, argv: ["x", ""] },
      },
      ["j2.3.1", "0", "exec", "/r", "", "0", "0", "x", ""],
    ],
    [
      "a job run as another account: its job.sh",
      { dir: "/w/attempts/j3.0.2", times: true, exec: null },
      ["j3.0.2", "1", "script"],
    ],
  ])("%s", (_what, request, fields) => {
    expect(encodeLaunch("/w/attempts", request)).toBe(
      `${fields.length}\0${fields.map((f) => `${f}\0`).join("")}`,
    );
  });

  it("refuses a field with a NUL byte, which would end it early", () => {
    const request = {
      dir: "/w/attempts/j1.0.1",
      times: false,
      exec: { cwd: "/r", cgroupProcs: [], env: { A: "a\0b" }, argv: ["true"] },
    };
    expect(() => encodeLaunch("/w/attempts", request)).toThrow(/NUL byte/);
  });
});

describe("parseLauncherLines", () => {
  it("reads starts and exits, passing over other lines", () => {
    expect(
      parseLauncherLines("started 12 j1.0.1\nnoise\nexited 0 j1.0.1\nexited 137 j2.0.1.rank1\n"),
    ).toEqual([
      { kind: "started", value: 12, name: "j1.0.1" },
      { kind: "exited", value: 0, name: "j1.0.1" },
      { kind: "exited", value: 137, name: "j2.0.1.rank1" },
    ]);
  });

  it("reads the start time the compiled launcher tells with a start", () => {
    expect(parseLauncherLines("started 12:98765 j1.0.1\nexited 0 j1.0.1\nexited 3:4 j1.0.2\n")).toEqual([
      { kind: "started", value: 12, name: "j1.0.1", startTicks: "98765" },
      { kind: "exited", value: 0, name: "j1.0.1" },
      // Only a start carries a time.
      { kind: "exited", value: 3, name: "j1.0.2" },
    ]);
  });
});

describe("chooseLauncher", () => {
  it("takes sh when asked, and refuses a name it does not know", () => {
    expect(chooseLauncher("sh")).toBe("sh");
    expect(() => chooseLauncher("bash")).toThrow(
      "STEWARD_LAUNCHER must be one of auto, c, perl, sh, not bash",
    );
  });

  it("takes the compiled launcher first where launcher.c compiles, and perl when asked", () => {
    // Every machine the tests run on has a C compiler (npm builds native modules with it) and perl.
    const program = compiledLauncher();
    expect(program).not.toBeNull();
    expect(existsSync(program!)).toBe(true);
    expect(chooseLauncher(undefined)).toBe("c");
    expect(chooseLauncher("auto")).toBe("c");
    expect(chooseLauncher("c")).toBe("c");
    expect(chooseLauncher("perl")).toBe("perl");
  });

  it("does not take a kept program that does not run here (another machine's), and says why", async () => {
    const cache = mkdtempSync(join(tmpdir(), "steward-launcher-cache-"));
    process.env.STEWARD_LAUNCHER_CACHE = cache;
    try {
      vi.resetModules();
      const compiledHere = await import("../../../../src/agent/launcher/launcher.ts");
      const program = compiledHere.compiledLauncher();
      expect(program?.startsWith(cache)).toBe(true);
      expect(program).toContain(`-${process.platform}-${process.arch}/`);
      writeFileSync(program!, "not a program of this machine\n");
      chmodSync(program!, 0o755);
      vi.resetModules();
      const later = await import("../../../../src/agent/launcher/launcher.ts");
      expect(later.compiledLauncher()).toBeNull();
      expect(() => later.chooseLauncher("c")).toThrow("does not run here");
      expect(later.chooseLauncher("auto")).toBe("perl");
    } finally {
      delete process.env.STEWARD_LAUNCHER_CACHE;
      vi.resetModules();
      rmSync(cache, { recursive: true, force: true });
    }
  });
});

// The bundle's config.json and the container's argv and environment.

import { describe, expect, it } from "vitest";
import {
  type BundleSettings,
  bundleConfig,
  containerArgv,
  containerEnvironment,
  SIGNAL_FORWARDER,
  underSignalForwarder,
} from "../../../../src/agent/containers/bundle-config.ts";

describe("containerArgv", () => {
  it.each<[string, string | string[], string[] | undefined, string[]]>([
    ["a string through the image's shell", "echo hi > out", undefined, ["/bin/sh", "-c", "echo hi > out"]],
    ["a list as it is", ["python3", "-c", "1"], undefined, ["python3", "-c", "1"]],
    ["a string after the entrypoint, one word", "run --fast", ["/entry"], ["/entry", "run --fast"]],
    [
      "a list after the entrypoint",
      ["a", "b"],
      ["/usr/bin/python3", "-u"],
      ["/usr/bin/python3", "-u", "a", "b"],
    ],
  ])("%s", (_, command, entrypoint, argv) => {
    expect(containerArgv(command, entrypoint)).toStrictEqual(argv);
  });

  it("under the signal forwarder, the job's argv follows the forwarder's own", () => {
    expect(underSignalForwarder(["sleep", "5"])).toStrictEqual([
      "/bin/sh",
      "-c",
      SIGNAL_FORWARDER,
      "steward-init",
      "sleep",
      "5",
    ]);
  });
});

describe("containerEnvironment", () => {
  it.each([
    [
      "a default PATH without the image's",
      {},
      { A: "1" },
      { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", A: "1" },
    ],
    ["the image's PATH", { PATH: "/opt/bin", X: "i" }, { X: "j" }, { PATH: "/opt/bin", X: "j" }],
    ["the job file's PATH over the image's", { PATH: "/opt/bin" }, { PATH: "/mine" }, { PATH: "/mine" }],
  ])("%s", (_, image, job, environment) => {
    expect(containerEnvironment(image, job)).toStrictEqual(environment);
  });
});

describe("bundleConfig", () => {
  function settings(over: Partial<BundleSettings> = {}): BundleSettings {
    return {
      argv: ["/bin/sh", "-c", "true"],
      env: { STEWARD_JOB_ID: "7", A: "x=y" },
      cwd: "/w/attempts/7.0.1/run",
      rootfs: "/w/attempts/7.0.1/bundle/rootfs",
      uid: 1001,
      gid: 1002,
      groups: [1003],
      binds: [{ source: "/w/attempts/7.0.1/run", target: "/w/attempts/7.0.1/run", readOnly: false }],
      network: "host",
      cgroupsPath: "steward-7.0.1",
      hostName: "h1",
      ...over,
    } as BundleSettings;
  }

  it("has no rlimits, runs the job's argv, environment, folder and account, in a cgroup under the attempt's", () => {
    const config = bundleConfig(settings()) as {
      process: Record<string, unknown> & { capabilities: { bounding: string[] } };
      linux: { cgroupsPath: string; namespaces: { type: string }[] };
      mounts: { destination: string; options?: string[] }[];
      root: { path: string };
    };
    expect(config.process.rlimits).toBeUndefined();
    expect(config.process.args).toStrictEqual(["/bin/sh", "-c", "true"]);
    expect(config.process.env).toStrictEqual(["STEWARD_JOB_ID=7", "A=x=y"]);
    expect(config.process.cwd).toBe("/w/attempts/7.0.1/run");
    expect(config.process.user).toStrictEqual({ uid: 1001, gid: 1002, additionalGids: [1003] });
    expect(config.process.capabilities.bounding).toStrictEqual([]);
    expect(config.process.noNewPrivileges).toBe(true);
    expect(config.root.path).toBe("/w/attempts/7.0.1/bundle/rootfs");
    expect(config.linux.cgroupsPath).toBe("steward-7.0.1");
    expect(config.linux.cgroupsPath.startsWith("/")).toBe(false);
    expect(config.linux.namespaces.map((each) => each.type)).toStrictEqual(["pid", "ipc", "uts", "mount"]);
    const bind = config.mounts.find((mount) => mount.destination === "/w/attempts/7.0.1/run");
    expect(bind?.options).toContain("rw");
  });

  it.each([
    ["none", ["pid", "ipc", "uts", "mount", "network"]],
    ["host", ["pid", "ipc", "uts", "mount"]],
  ] as const)("network %s: namespaces %j", (network, namespaces) => {
    const config = bundleConfig(settings({ network })) as { linux: { namespaces: { type: string }[] } };
    expect(config.linux.namespaces.map((each) => each.type)).toStrictEqual(namespaces);
  });

  it("a read-only mount is ro; root keeps runc's default capabilities", () => {
    const config = bundleConfig(
      settings({ uid: 0, gid: 0, groups: [], binds: [{ source: "/data", target: "/ref", readOnly: true }] }),
    ) as {
      mounts: { destination: string; source: string; options?: string[] }[];
      process: { user: object; capabilities: { bounding: string[] } };
    };
    expect(config.mounts.find((mount) => mount.destination === "/ref")).toMatchObject({
      source: "/data",
      options: ["rbind", "nosuid", "nodev", "ro"],
    });
    expect(config.process.user).toStrictEqual({ uid: 0, gid: 0 });
    expect(config.process.capabilities.bounding).toStrictEqual([
      "CAP_AUDIT_WRITE",
      "CAP_KILL",
      "CAP_NET_BIND_SERVICE",
    ]);
  });
});

// An attempt's OCI runtime config (the bundle's config.json, runtime-spec 1.0): the job's command
// and environment, its working folder and checkpoint folder bind-mounted at their own paths, the
// user it runs as, the namespaces it gets, and the cgroup it goes in: one under the attempt's own
// (a relative cgroupsPath: under the cgroup the runtime runs in, which the launcher made the
// attempt's), so the attempt's memory, CPU and process limits hold it and its out-of-memory kills
// are the attempt's. No rlimits: the runtime would set them, and the agent's hosts may refuse it
// (docs/containers.md). Pure.

import type { ContainerNetwork } from "../../common/model/container-spec.ts";

/** A folder or file of the host seen inside at `target`. */
export interface Bind {
  source: string;
  target: string;
  readOnly: boolean;
}

export interface BundleSettings {
  argv: readonly string[];
  env: Readonly<Record<string, string>>;
  cwd: string;
  /** The container's root folder (the image, under an overlay of the attempt's own). */
  rootfs: string;
  uid: number;
  gid: number;
  groups: readonly number[];
  binds: readonly Bind[];
  network: ContainerNetwork;
  /** Relative to the runtime's own cgroup (the attempt's): the container's own under it. */
  cgroupsPath: string;
  hostname: string;
}

/**
 * The argv the container runs: a string command through the image's `/bin/sh -c` (or given to the
 * entrypoint as one word), a list as it is (after the entrypoint).
 */
export function containerArgv(command: string | readonly string[], entrypoint?: readonly string[]): string[] {
  const words =
    typeof command === "string" ? (entrypoint ? [command] : ["/bin/sh", "-c", command]) : [...command];
  return entrypoint ? [...entrypoint, ...words] : words;
}

/**
 * What the image's /bin/sh runs as the container's process 1, the job's argv after it: the kernel
 * gives process 1 of a pid namespace only the signals it handles, so a job run as process 1
 * without a handler would miss a stop's SIGTERM and run its whole grace period. This shell passes
 * SIGTERM, SIGINT and SIGHUP on to the job and exits with the job's code.
 */
export const SIGNAL_FORWARDER = [
  `trap 'kill -TERM "$child" 2>/dev/null' TERM`,
  `trap 'kill -INT "$child" 2>/dev/null' INT`,
  `trap 'kill -HUP "$child" 2>/dev/null' HUP`,
  `"$@" & child=$!`,
  `while :; do wait "$child"; code=$?; kill -0 "$child" 2>/dev/null || exit "$code"; done`,
].join("\n");

/** `argv` under the signal forwarder, run by the image's /bin/sh. */
export function underSignalForwarder(argv: readonly string[]): string[] {
  return ["/bin/sh", "-c", SIGNAL_FORWARDER, "steward-init", ...argv];
}

/**
 * The environment inside: the image's own (its PATH, ...), then the job's (its file's `env`, the
 * STEWARD_* variables) over it; none of the agent's own, which jobs outside inherit.
 */
export function containerEnvironment(
  image: Readonly<Record<string, string>>,
  job: Readonly<Record<string, string>>,
): Record<string, string> {
  return { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ...image, ...job };
}

/** The capabilities runc's own default spec gives; an unprivileged user's are cleared by the kernel. */
const CAPABILITIES = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"];

/** The config.json object for `settings`. */
export function bundleConfig(settings: BundleSettings): Record<string, unknown> {
  const capabilities = settings.uid === 0 ? CAPABILITIES : [];
  return {
    ociVersion: "1.0.2",
    process: {
      terminal: false,
      user: {
        uid: settings.uid,
        gid: settings.gid,
        ...(settings.groups.length > 0 ? { additionalGids: [...settings.groups] } : {}),
      },
      args: [...settings.argv],
      env: Object.entries(settings.env).map(([name, value]) => `${name}=${value}`),
      cwd: settings.cwd,
      capabilities: {
        bounding: capabilities,
        effective: capabilities,
        permitted: capabilities,
        ambient: [],
      },
      noNewPrivileges: true,
    },
    root: { path: settings.rootfs, readonly: false },
    hostname: settings.hostname,
    mounts: [
      { destination: "/proc", type: "proc", source: "proc" },
      {
        destination: "/dev",
        type: "tmpfs",
        source: "tmpfs",
        options: ["nosuid", "strictatime", "mode=755", "size=65536k"],
      },
      {
        destination: "/dev/pts",
        type: "devpts",
        source: "devpts",
        options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"],
      },
      {
        destination: "/dev/shm",
        type: "tmpfs",
        source: "shm",
        options: ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
      },
      {
        destination: "/dev/mqueue",
        type: "mqueue",
        source: "mqueue",
        options: ["nosuid", "noexec", "nodev"],
      },
      { destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"] },
      { destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777"] },
      ...settings.binds.map((bind) => ({
        destination: bind.target,
        type: "bind",
        source: bind.source,
        options: ["rbind", "nosuid", "nodev", bind.readOnly ? "ro" : "rw"],
      })),
    ],
    linux: {
      cgroupsPath: settings.cgroupsPath,
      resources: { devices: [{ allow: false, access: "rwm" }] },
      namespaces: [
        { type: "pid" },
        { type: "ipc" },
        { type: "uts" },
        { type: "mount" },
        ...(settings.network === "none" ? [{ type: "network" }] : []),
      ],
      maskedPaths: [
        "/proc/acpi",
        "/proc/asound",
        "/proc/kcore",
        "/proc/keys",
        "/proc/latency_stats",
        "/proc/timer_list",
        "/proc/timer_stats",
        "/proc/sched_debug",
        "/sys/firmware",
        "/proc/scsi",
      ],
      readonlyPaths: ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
    },
  };
}

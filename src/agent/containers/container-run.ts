// An attempt run in its job's container (docs/containers.md): the image unpacked (image-cache.ts),
// an overlay of the attempt's own over it as the container's root (what the job writes there goes
// with the attempt; the shared image is never written), the bundle's config.json
// (bundle-config.ts), and the runtime's command line, which the launcher starts as the job's
// process in the attempt's cgroup: `runc run --keep`, so that the container's cgroup, with its
// out-of-memory kills, is still there when the attempt's end is measured. At the end, `runc kill`
// then `runc delete --force` and the overlay unmounted: nothing of the container outlives its attempt.

import { execFile } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import type { ContainerSpec } from "../../common/model/container-spec.ts";
import { parseImageName } from "../../common/model/image-name.ts";
import { writeNewFile } from "../files/new-file.ts";
import {
  type Bind,
  bundleConfig,
  containerArgv,
  containerEnvironment,
  underSignalForwarder,
} from "./bundle-config.ts";
import type { ImageCache } from "./image-cache.ts";
import type { ContainerRuntime } from "./runtime.ts";

const run = promisify(execFile);

/** What the agent runs containers with: its runtime, the runtime's state folder, its image cache. */
export interface ContainerHost {
  runtime: ContainerRuntime;
  /** runc's --root: the containers' state, the agent's own (under its work folder). */
  stateDir: string;
  images: ImageCache;
}

/** What of the attempt goes into its container. */
export interface ContainerAttempt {
  /** The attempt's folder: the bundle is made in it. */
  dir: string;
  container: ContainerSpec;
  command: string | readonly string[];
  env: Readonly<Record<string, string>>;
  /** Where the job runs (its working folder), and where it finds its image when given by a relative path. */
  cwd: string;
  runDir: string;
  /** Host folders the job reaches at their own paths: its working folder, checkpoint and notes folders, the SDKs. */
  folders: readonly { path: string; readOnly: boolean }[];
  uid: number;
  gid: number;
  groups: readonly number[];
  hostName: string;
}

/** The container's name for the runtime: the attempt folder's, which is unique on the agent. */
export function containerId(dir: string): string {
  return `steward-${basename(dir)}`;
}

/**
 * Unpacks the image (once per host), makes the bundle and answers the runtime's argv to start as
 * the job. Throws with what failed (the image, its digest, the overlay).
 */
export async function prepareContainer(host: ContainerHost, attempt: ContainerAttempt): Promise<string[]> {
  const parsed = parseImageName(attempt.container.image);
  if (!("image" in parsed)) throw new Error(`container image: ${parsed.problem}`);
  const image = await host.images.image(parsed.image, attempt.runDir);
  const bundle = join(attempt.dir, "bundle");
  const rootfs = join(bundle, "rootfs");
  for (const folder of [bundle, join(bundle, "upper"), join(bundle, "work"), rootfs])
    mkdirSync(folder, { mode: 0o700 });
  // The container's root takes the upper folder's owner and mode: every account's to pass, as an
  // image's root is (the bundle folder around it stays root's).
  chmodSync(join(bundle, "upper"), 0o755);
  // An overlay's options are separated by commas, and its lower folders by colons.
  for (const path of [image.rootfs, bundle])
    if (/[,:]/.test(path))
      throw new Error(`cannot make the container's root: ${path} holds a comma or colon`);
  try {
    await run("mount", [
      "-t",
      "overlay",
      "overlay",
      "-o",
      `lowerdir=${image.rootfs},upperdir=${join(bundle, "upper")},workdir=${join(bundle, "work")}`,
      rootfs,
    ]);
  } catch (error) {
    throw new Error(
      `cannot make the container's root (an overlay over image ${image.digest}): ${stderrOf(error)}`,
    );
  }
  const binds: Bind[] = [
    ...attempt.folders.map((folder) => ({
      source: folder.path,
      target: folder.path,
      readOnly: folder.readOnly,
    })),
    ...attempt.container.mounts,
  ];
  const config = bundleConfig({
    // An image without a shell runs the job as its process 1 itself (docs/containers.md).
    argv: lstatSync(join(rootfs, "bin", "sh"), { throwIfNoEntry: false })
      ? underSignalForwarder(containerArgv(attempt.command, attempt.container.entrypoint))
      : containerArgv(attempt.command, attempt.container.entrypoint),
    env: containerEnvironment(image.env, attempt.env),
    cwd: attempt.cwd,
    rootfs,
    uid: attempt.uid,
    gid: attempt.gid,
    groups: attempt.groups,
    binds,
    network: attempt.container.network,
    cgroupsPath: containerId(attempt.dir),
    hostname: attempt.hostName,
  });
  // Root's alone, like job.sh: it holds the job's environment.
  writeNewFile(join(bundle, "config.json"), JSON.stringify(config));
  return [
    host.runtime.path,
    "--root",
    host.stateDir,
    "run",
    "--keep",
    "--bundle",
    bundle,
    containerId(attempt.dir),
  ];
}

/** Kills what is left of the attempt's container (it stays, with its cgroup, to be measured). */
export async function killContainer(host: ContainerHost, dir: string): Promise<void> {
  await run(host.runtime.path, ["--root", host.stateDir, "kill", "--all", containerId(dir), "KILL"]).catch(
    () => {},
  );
}

/** Removes the attempt's container (its processes, cgroup and state) and unmounts its root. */
export async function removeContainer(host: ContainerHost, dir: string): Promise<void> {
  await run(host.runtime.path, ["--root", host.stateDir, "delete", "--force", containerId(dir)]).catch(
    () => {},
  );
  const rootfs = join(dir, "bundle", "rootfs");
  if (lstatSync(dirname(rootfs), { throwIfNoEntry: false }))
    await run("umount", ["--lazy", rootfs]).catch(() => {});
}

function stderrOf(error: unknown): string {
  const stderr = (error as { stderr?: string }).stderr?.trim();
  return stderr || (error as Error).message;
}

// How an attempt with a `container` starts (docs/containers.md): what the launcher is told to run
// is the runtime, as root, in the attempt's cgroup; the job's command, environment, working folder
// and account go into the bundle (containers/container-run.ts). The folders the job reaches
// outside its image are its working folder, its checkpoint and notes folders, a rank's nodes file
// and the SDKs, each at its own path.

import { dirname } from "node:path";
import type { StartMessage } from "../../common/protocol/messages.ts";
import type { JobUser } from "../accounts/run-as.ts";
import { type ContainerHost, prepareContainer } from "../containers/container-run.ts";
import { type JobPaths, jobEnvironment, PYTHON_SDK_PATH, SDK_PATH } from "./job-script.ts";

/**
 * The start message the launcher runs for a container attempt: the runtime's command line, with
 * no env of the job's (the bundle holds it). Throws when the host has no runtime or the image
 * cannot be had (its digest named).
 */
export async function containerStart(
  host: ContainerHost | null | undefined,
  spec: StartMessage,
  dir: string,
  paths: JobPaths,
  user: JobUser | null,
): Promise<StartMessage> {
  const container = spec.container;
  if (!container) return spec;
  if (!host) throw new Error("this host has no container runtime (docs/containers.md)");
  const cwd = paths.workdir ?? paths.runDir;
  const folders = [
    { path: cwd, readOnly: false },
    { path: paths.checkpointDir, readOnly: false },
    { path: dirname(paths.progressFile), readOnly: false },
    { path: dirname(SDK_PATH), readOnly: true },
    { path: PYTHON_SDK_PATH, readOnly: true },
    ...(spec.gang && paths.nodesFile ? [{ path: paths.nodesFile, readOnly: true }] : []),
  ];
  const account = user?.account;
  const argv = await prepareContainer(host, {
    dir,
    container,
    command: spec.command,
    env: {
      ...jobEnvironment(spec, paths),
      ...(account ? { HOME: account.home, USER: account.name, LOGNAME: account.name } : {}),
    },
    cwd,
    runDir: paths.runDir,
    folders,
    uid: account?.uid ?? process.geteuid?.() ?? 0,
    gid: account?.gid ?? process.getegid?.() ?? 0,
    groups: account?.groups ?? [],
    hostName: paths.hostName,
  });
  return { ...spec, command: argv, env: {} };
}

// What an agent runs containers with, chosen once at its start (docs/containers.md): the runtime
// (runtime.ts) with the agent's own state folder for it, and the image cache under its work
// folder; or none, and why, for the host facts and the agent's log.

import { join } from "node:path";
import type { Logger } from "pino";
import type { StaticFacts } from "../host/facts.ts";
import type { ContainerHost } from "./container-run.ts";
import { ImageCache } from "./image-cache.ts";
import { findContainerRuntime } from "./runtime.ts";

/**
 * The container host of an agent (its facts `fixed`: their `workDir`, and where the runtime's
 * facts go), with `--container-runtime` (absent: runc on PATH); null when there is none, the
 * reason in `containersUnavailable` and the log.
 */
export function openContainerHost(
  runtimePath: string | undefined,
  fixed: StaticFacts,
  log: Logger,
): ContainerHost | null {
  const choice = findContainerRuntime(runtimePath);
  if ("unavailable" in choice) {
    fixed.containersUnavailable = choice.unavailable;
    log.info(`containers: none (${choice.unavailable}): jobs with a container do not come here`);
    return null;
  }
  const runtime = choice.found;
  fixed.containers = runtime;
  log.info(`containers: ${runtime.runtime} ${runtime.version} (${runtime.path})`);
  return {
    runtime,
    stateDir: join(fixed.workDir, "containers"),
    images: new ImageCache(join(fixed.workDir, "images")),
  };
}

import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import type { Host, HostRemoved } from "../../common/api/hosts.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { ApiClient } from "../client.ts";
import { printJson, table } from "../format.ts";

export function registerHosts(program: Command): void {
  const hosts = program
    .command("hosts")
    .description(describe("hosts"))
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }) => {
      const hosts = await new ApiClient().json<Host[]>("GET", "/api/v1/hosts");
      if (options.json) return printJson(hosts);
      if (hosts.length === 0) return void process.stdout.write("no hosts\n");
      const rows = hosts.map((host) => [
        host.name,
        host.pool,
        // A full work folder takes no new work: said beside the state (host.facts.diskFull).
        host.state + (host.connected ? "" : " (disconnected)") + (host.facts.diskFull ? " (disk full)" : ""),
        `${host.slots - host.slotsFree}/${host.slots}`,
        host.facts.arch,
        host.facts.cpus,
        host.facts.memoryMb,
        host.facts.load1,
        host.facts.speed,
        // The folders it shares (--shared), where jobs with a workdir run in place.
        host.facts.shared?.length ? host.facts.shared.join(",") : "-",
      ]);
      process.stdout.write(
        `${table(["NAME", "POOL", "STATE", "BUSY", "ARCH", "CPUS", "MEM_MB", "LOAD1", "SPEED", "SHARED"], rows)}\n`,
      );
      const open = hosts.filter(
        (host) => (host.facts.gpus?.length ?? 0) > 0 && host.facts.gpusIsolated === false,
      );
      if (open.length > 0)
        process.stdout.write(
          `note: GPUs not isolated on ${open.map((host) => host.name).join(", ")}: a job there can open GPUs not given to it (no devices cgroup, as on cgroup v2); CUDA_VISIBLE_DEVICES names its own\n`,
        );
    });
  hosts
    .command("rm")
    .description(
      "forget a lost or disconnected host and revoke its host credential: its agent must join again with a join token (admin only)",
    )
    .argument("<host>", "host name")
    .option("--json", "print JSON")
    .action(async (name: string, options: { json?: boolean }, command: Command) => {
      // Commander hands an option after the subcommand to `hosts` when both define it (the root
      // program does not use positional options): `hosts rm HOST --json` lands on the parent.
      const json = options.json || command.parent?.opts().json === true;
      const removed = await new ApiClient().json<HostRemoved>(
        "DELETE",
        `/api/v1/hosts/${encodeURIComponent(name)}`,
      );
      if (json) return printJson(removed);
      const revoked = removed.revokedCredentials.length
        ? `, host credential ${removed.revokedCredentials.join(", ")} revoked`
        : "";
      process.stdout.write(`host ${removed.name}: removed${revoked}\n`);
    });
  program
    .command("drain")
    .description(describe("drain"))
    .argument("<host>", "host name")
    .option("--wait", "return once the host's tasks have ended or moved elsewhere (exit 2 on --timeout)")
    .option("--timeout <seconds>", "with --wait: give up after this many seconds", parseFloat)
    .option("--json", "print the host as JSON")
    .action(async (name: string, options: { wait?: boolean; timeout?: number; json?: boolean }) => {
      if (options.timeout !== undefined && !options.wait) throw new CliError("--timeout goes with --wait");
      if (options.timeout !== undefined && !(options.timeout >= 0))
        throw new CliError("--timeout must be a number of seconds");
      const client = new ApiClient();
      let host = await client.json<Host>("POST", `/api/v1/hosts/${encodeURIComponent(name)}/drain`, {
        json: {},
      });
      if (options.wait) {
        const waited = await waitForDrained(client, name, options.timeout ?? null);
        if (waited.timedOut) process.exitCode = 2;
        // A host removed meanwhile runs nothing any more: the drain's answer is told.
        if (waited.host) host = waited.host;
      }
      if (options.json) return printJson(host);
      process.stdout.write(`host ${host.name}: ${host.state}${options.wait ? describeWork(host) : ""}\n`);
    });
  program
    .command("undrain")
    .description(describe("undrain"))
    .argument("<host>", "host name")
    .option("--json", "print the host as JSON")
    .action(async (name: string, options: { json?: boolean }) => {
      const host = await new ApiClient().json<Host>(
        "POST",
        `/api/v1/hosts/${encodeURIComponent(name)}/undrain`,
        { json: {} },
      );
      if (options.json) return printJson(host);
      process.stdout.write(`host ${host.name}: ${host.state}\n`);
    });
}

function describeWork(host: Host): string {
  if (host.state === "ready") return "";
  return host.liveAttempts === 0 ? ", no work left" : `, ${host.liveAttempts} attempt(s) still running`;
}

/**
 * Polls the host until it runs no attempt, or the time is up; answers the host as last seen (null
 * when it was removed meanwhile, which counts as drained).
 */
async function waitForDrained(
  client: ApiClient,
  name: string,
  timeoutSeconds: number | null,
): Promise<{ host: Host | null; timedOut: boolean }> {
  const deadline = timeoutSeconds === null ? Number.POSITIVE_INFINITY : Date.now() + timeoutSeconds * 1000;
  let delay = 100;
  for (;;) {
    const host = (await client.json<Host[]>("GET", "/api/v1/hosts")).find((each) => each.name === name);
    if (!host || host.liveAttempts === 0) return { host: host ?? null, timedOut: false };
    if (Date.now() >= deadline) return { host, timedOut: true };
    await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
    delay = Math.min(1000, delay * 1.5);
  }
}

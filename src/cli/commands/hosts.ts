import type { Command } from "commander";
import type { Host } from "../../api/schemas.ts";
import { ApiClient } from "../client.ts";
import { printJson, table } from "../format.ts";
import { describe } from "./index.ts";

export function registerHosts(program: Command): void {
  program
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
        host.state + (host.connected ? "" : " (disconnected)"),
        `${host.slots - host.slotsFree}/${host.slots}`,
        host.facts.arch,
        host.facts.cpus,
        host.facts.memoryMb,
        host.facts.load1,
        host.facts.speed,
      ]);
      process.stdout.write(
        `${table(["NAME", "POOL", "STATE", "BUSY", "ARCH", "CPUS", "MEM_MB", "LOAD1", "SPEED"], rows)}\n`,
      );
    });
  program
    .command("drain")
    .description(describe("drain"))
    .argument("<host>", "host name")
    .option("--json", "print the host as JSON")
    .action(async (name: string, options: { json?: boolean }) => {
      const host = await new ApiClient().json<Host>(
        "POST",
        `/api/v1/hosts/${encodeURIComponent(name)}/drain`,
        { json: {} },
      );
      if (options.json) return printJson(host);
      process.stdout.write(`host ${host.name}: ${host.state}\n`);
    });
}

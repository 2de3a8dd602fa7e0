// Settings of the daemons from a config file and STEWARD_* variables, applied to the real commands'
// options (server, agent) through the root program's hook, as `steward server --config F` does.

import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CliError } from "../../../src/common/command-line/cli-error.ts";
import { registerAgent } from "../../../src/daemons/commands/agent.ts";
import { registerServer } from "../../../src/daemons/commands/server.ts";
import { registerUp } from "../../../src/daemons/commands/up.ts";
import { applySettings, settingsYaml } from "../../../src/daemons/settings.ts";
import { newProgram } from "../../../src/entry/program.ts";

let dir: string;
const savedEnv = { ...process.env };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "steward-settings-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  process.env = { ...savedEnv };
});

/** The config file, mode 0600: one holding a secret that others may read is refused. */
function file(text: string): string {
  const path = join(dir, "steward.yaml");
  writeFileSync(path, text);
  chmodSync(path, 0o600);
  return path;
}

/** Parses `steward ARGS` through the real program and hook; the daemon's options, never run. */
async function optionsOf(args: string[]): Promise<{ options: Record<string, unknown>; command: Command }> {
  const program = newProgram();
  registerServer(program);
  registerAgent(program);
  registerUp(program);
  const command = program.commands.find((each) => each.name() === args[0]) as Command;
  let options: Record<string, unknown> = {};
  command.action((parsed: Record<string, unknown>) => {
    options = parsed;
  });
  await program.parseAsync(args, { from: "user" });
  return { options, command };
}

async function failureOf(args: string[]): Promise<CliError> {
  const error = await optionsOf(args).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(CliError);
  return error as CliError;
}

describe("a config file", () => {
  it("sets the flags it names, through their parsers", async () => {
    const config = file(
      "port: 4999\nheartbeat-seconds: 0.5\nadvertise-url: http://h1:4780\nno-preempt: true\nmetrics-open: true\n",
    );
    const { options } = await optionsOf(["server", "--config", config]);
    expect(options).toMatchObject({
      port: 4999,
      heartbeatSeconds: 0.5,
      advertiseUrl: "http://h1:4780",
      preempt: false,
      metricsOpen: true,
      // Untouched flags keep their defaults.
      host: "127.0.0.1",
      hostTimeoutSeconds: 10,
    });
  });

  it("takes a list for a repeatable flag, and a required flag from it (agent --server)", async () => {
    const config = file("server: http://a:4780\nlabel: [zone=eu, gpu=a100]\nslots: 3\n");
    const { options } = await optionsOf(["agent", "--config", config]);
    expect(options).toMatchObject({ server: "http://a:4780", label: { zone: "eu", gpu: "a100" }, slots: 3 });
  });

  it("takes the agent's shared folders as a list (shared:), each checked as --shared is", async () => {
    const data = mkdtempSync(join(dir, "data-"));
    const scratch = mkdtempSync(join(dir, "scratch-"));
    const config = file(`server: http://a:4780\nshared: [${data}/, ${scratch}]\n`);
    expect((await optionsOf(["agent", "--config", config])).options.shared).toEqual([data, scratch]);
    process.env.STEWARD_SHARED = `${scratch},${data}`;
    expect((await optionsOf(["agent", "--server", "http://a:4780"])).options.shared).toEqual([scratch, data]);
    delete process.env.STEWARD_SHARED;
    const missing = join(dir, "missing");
    const wrong = file(`server: http://a:4780\nshared: [${data}, ${missing}]\n`);
    const error = await failureOf(["agent", "--config", wrong]);
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(
      `${wrong}:2: shared: --shared ${missing}: no such folder (a shared folder must be there when the agent starts: is it mounted?)`,
    );
  });

  it("is overridden by STEWARD_* variables, which flags override", async () => {
    const config = file("port: 4999\nheartbeat-seconds: 3\nhost-timeout-seconds: 30\n");
    process.env.STEWARD_HEARTBEAT_SECONDS = "5";
    process.env.STEWARD_PORT = "5000";
    process.env.STEWARD_NO_RESCHEDULE = "true";
    const { options } = await optionsOf(["server", "--config", config, "--port", "5001"]);
    expect(options).toMatchObject({
      port: 5001,
      heartbeatSeconds: 5,
      hostTimeoutSeconds: 30,
      reschedule: false,
    });
  });

  it("sets steward up's flags too", async () => {
    const config = file("agents: 0\nslots: 4\ndata: /srv/steward\n");
    const { options } = await optionsOf(["up", "--config", config]);
    expect(options).toMatchObject({ agents: 0, slots: 4, data: "/srv/steward" });
  });

  it("is found through STEWARD_CONFIG", async () => {
    process.env.STEWARD_CONFIG = file("port: 4999\n");
    const { options } = await optionsOf(["server"]);
    expect(options.port).toBe(4999);
  });

  it("keeps the variables' meanings: STEWARD_TOKEN and STEWARD_HOST are not the server's --token and --host", async () => {
    process.env.STEWARD_TOKEN = "the-cli-token";
    process.env.STEWARD_HOST = "a-job-host";
    process.env.STEWARD_JOIN_TOKEN = "joining";
    const { options: server } = await optionsOf(["server"]);
    expect(server.token).toBeUndefined();
    process.env.STEWARD_ADMIN_TOKEN = "the-admin-token";
    expect((await optionsOf(["server"])).options.token).toBe("the-admin-token");
    delete process.env.STEWARD_ADMIN_TOKEN;
    expect(server.host).toBe("127.0.0.1");
    expect(server.joinToken).toBe("joining");
    const { options: agent } = await optionsOf(["agent", "--server", "http://a:4780"]);
    expect(agent.token).toBe("joining");
  });

  it("with an unknown key fails naming the key and its line (exit 2)", async () => {
    const config = file("port: 4999\n# a comment\nheartbeat-secs: 2\n");
    const error = await failureOf(["server", "--config", config]);
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(
      `${config}:3: unknown key heartbeat-secs (the keys are the flags of steward server without the dashes)`,
    );
  });

  it("with a value of the wrong type fails naming the key", async () => {
    const cases: [string, string][] = [
      ["\nport: abc\n", ":2: port: --port needs a number, not abc"],
      ["port: [1, 2]\n", ":1: port: needs a single value, not a list"],
      ["metrics-open: yes please\n", ":1: metrics-open: needs true or false, not yes please"],
      ["host: {a: 1}\n", ":1: host: needs a single value, not a map"],
      ["pools: true\n", ":1: pools: needs a value"],
      ["- port\n", ":1: needs a map of settings"],
      ["port: 1\nport: 2\n", ":2: Map keys must be unique"],
    ];
    for (const [text, message] of cases) {
      const config = file(text);
      const error = await failureOf(["server", "--config", config]);
      expect(error.exitCode).toBe(2);
      expect(error.message).toContain(`${config}${message}`);
    }
  });

  it("a bad variable fails naming it", async () => {
    process.env.STEWARD_HEARTBEAT_SECONDS = "often";
    const error = await failureOf(["server"]);
    expect(error.message).toBe("STEWARD_HEARTBEAT_SECONDS: --heartbeat-seconds needs a number, not often");
    expect(error.exitCode).toBe(2);
  });
});

describe("the effective settings", () => {
  it("are YAML with the file's keys, where each value came from, and secrets redacted", async () => {
    const program = newProgram();
    registerServer(program);
    const command = program.commands[0];
    command.setOptionValueWithSource(
      "config",
      file("token: admin-secret\nstore: postgres://steward:pw@db:5432/grid\nport: 4999\n"),
      "cli",
    );
    applySettings(command, { STEWARD_JOIN_TOKEN: "join-secret", STEWARD_HEARTBEAT_SECONDS: "4" });
    const yaml = settingsYaml(command);
    expect(yaml).not.toContain("secret");
    expect(yaml).not.toContain(":pw@");
    expect(yaml).toContain("token: <redacted> # from");
    expect(yaml).toContain("join-token: <redacted> # from STEWARD_JOIN_TOKEN\n");
    expect(yaml).toContain("store: postgres://steward:<redacted>@db:5432/grid # from");
    expect(yaml).toContain("heartbeat-seconds: 4 # from STEWARD_HEARTBEAT_SECONDS\n");
    expect(yaml).toContain("host: 127.0.0.1\n");
    expect(yaml).toContain("no-preempt: false\n");
  });
});

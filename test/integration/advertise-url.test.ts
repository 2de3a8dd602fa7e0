// The URL a server advertises, as a real process shows it: the default with a wildcard listen
// address (the host name, with a warning), `up --advertise-url` (its own agents still reach it on
// this machine), and the flag's checks stopping the start.

import { hostname } from "node:os";
import { afterEach, expect, it } from "vitest";
import { isLoopbackHost } from "../../src/broker/server/advertise-url.ts";
import {
  cleanup,
  cli,
  freePort,
  type StewardProcess,
  startServerProcess,
  startUp,
  tempDir,
} from "../helpers/steward.ts";

let processes: StewardProcess[] = [];
let dirs: string[] = [];

afterEach(async () => {
  for (const running of processes) await running.stop();
  cleanup(...processes.map((running) => running.data), ...dirs);
  processes = [];
  dirs = [];
});

async function leaderOf(server: StewardProcess): Promise<string> {
  return ((await (await fetch(`${server.url}/healthz`)).json()) as { leader: string }).leader;
}

it("on 0.0.0.0 without --advertise-url it advertises the host name, never loopback, and says so", async () => {
  const server = await startServerProcess({ args: ["--host", "0.0.0.0"] });
  processes.push(server);
  const leader = new URL(await leaderOf(server));
  const name = hostname();
  expect(leader.port).toBe(String(server.port));
  // The host name, or its fully qualified form.
  expect(leader.hostname === name.toLowerCase() || leader.hostname.startsWith(`${name.toLowerCase()}.`)).toBe(
    true,
  );
  expect(isLoopbackHost(leader.hostname)).toBe(false);
  expect(server.output()).toContain(`advertising ${leader.origin}`);
  expect(server.output()).toContain("--advertise-url");
});

it("up --advertise-url: /healthz names it, while up's own agents reach the server on this machine", async () => {
  const port = await freePort();
  const advertised = `http://broker.example.invalid:${port}`;
  const up = await startUp({ port, agents: 1, args: ["--advertise-url", advertised] });
  processes.push(up);
  expect(await leaderOf(up)).toBe(advertised);
});

it("a bad --advertise-url stops the start with the reason", async () => {
  const cases: [string[], RegExp][] = [
    [["--advertise-url", "https://broker:4780"], /serves HTTP .*must start with http:\/\//],
    [["--advertise-url", "broker:4780"], /http:\/\/ or https:\/\//],
    [["--host", "0.0.0.0", "--advertise-url", "http://127.0.0.1:4780"], /loopback/],
    [["--advertise-url", "http://broker:4780/steward"], /path, query or fragment/],
  ];
  for (const [flags, message] of cases) {
    const data = tempDir();
    dirs.push(data);
    const result = await cli(null, ["server", "--data", data, "--port", String(await freePort()), ...flags]);
    expect(result.code, result.stderr).not.toBe(0);
    expect(result.stderr).toMatch(message);
  }
});

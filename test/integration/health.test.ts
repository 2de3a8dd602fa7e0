// /healthz tells who leads and in which term: a server takes the next term at every start, so a
// restarted server on the same store answers with a larger one (and a deposed one could not commit).

import { afterEach, expect, it } from "vitest";
import { cleanup, type StewardProcess, startServerProcess, tempDir } from "../helpers/steward.ts";

let server: StewardProcess | undefined;
const data = tempDir();

afterEach(async () => {
  await server?.stop();
  cleanup(data);
});

async function health(target: StewardProcess) {
  return (await fetch(`${target.url}/healthz`)).json();
}

it("answers {ok, role, leader, term}, the term one larger after a restart", async () => {
  server = await startServerProcess({ data });
  expect(await health(server)).toEqual({ ok: true, role: "leader", leader: server.url, term: 1 });
  await server.stop();
  server = await startServerProcess({ data });
  expect(await health(server)).toEqual({ ok: true, role: "leader", leader: server.url, term: 2 });
});

// The reactor's host lifecycle rules on a real SQLite store: undrain (a draining host takes work
// again, a lost one cannot be undrained), and removal (not of a connected host; the attempts still
// counted live end lost naming who removed it; the host credential is revoked; a restart keeps it gone).

import { afterEach, beforeEach, expect, it } from "vitest";
import { validateJobSpec } from "../../src/model/job-spec.ts";
import { ConflictError, NotFoundError } from "../../src/reactor/errors.ts";
import { Harness, hello, settle, submitOn } from "../helpers/core-harness.ts";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

it("a draining host takes no work; undrained, it does, and a restart keeps it ready", async () => {
  const { core } = harness;
  await core.agents.attachHost(hello("h1"));
  await core.hosts.drain("h1");
  const job = await submitOn(core, validateJobSpec({ command: "true" }), "alice", []);
  await settle();
  expect(harness.starts()).toEqual([]);

  expect((await core.hosts.undrain("h1")).state).toBe("ready");
  await settle();
  expect(harness.starts()).toMatchObject([{ host: "h1", jobId: job.id }]);
  expect(core.read.hostOf("h1")?.liveAttempts).toBe(1);
  // Undraining a ready host answers it as it is.
  expect((await core.hosts.undrain("h1")).state).toBe("ready");

  const restarted = await harness.restart();
  expect(restarted.read.hostOf("h1")?.state).toBe("ready");
});

it("a lost host cannot be undrained; an unknown one is not found", async () => {
  const { core } = harness;
  await core.agents.attachHost(hello("h1"));
  harness.now += 4000;
  core.reactor.tick();
  await settle();
  expect(core.read.hostOf("h1")?.state).toBe("lost");
  await expect(core.hosts.undrain("h1")).rejects.toThrow(ConflictError);
  await expect(core.hosts.undrain("h1")).rejects.toThrow("host h1 is lost");
  await expect(core.hosts.undrain("nohost")).rejects.toThrow(NotFoundError);
  await expect(core.hosts.removeHost("nohost")).rejects.toThrow(NotFoundError);
});

it("removes a disconnected host: its attempt ends lost naming who removed it, its credential is revoked", async () => {
  const { core } = harness;
  await core.agents.attachHost(hello("h1"), { parent: null });
  expect(core.read.tokens.credentialOf("h1", harness.now)).toBeDefined();
  const job = await submitOn(core, validateJobSpec({ command: "sleep 600" }), "alice", []);
  await settle();
  await core.agents.attemptStarted("h1", job.id, 0, 1);

  await expect(core.hosts.removeHost("h1", "bob")).rejects.toThrow(
    "host h1 is connected: drain it and stop its agent first",
  );
  core.detachHost("h1");
  const revoked = await core.hosts.removeHost("h1", "bob");
  expect(revoked).toHaveLength(1);
  expect(core.read.hostOf("h1")).toBeUndefined();
  expect(core.read.tokens.credentialOf("h1", harness.now)).toBeUndefined();
  const task = (await core.read.readJob(job.id)).tasks[0];
  expect(task.state).not.toBe("running");
  const events = await harness.store.events(job.id);
  expect(events.map((event) => event.message)).toContainEqual(
    expect.stringContaining("host h1 removed by bob"),
  );

  const restarted = await harness.restart();
  expect(restarted.read.hostOf("h1")).toBeUndefined();
  expect(restarted.read.tokens.credentialOf("h1", harness.now)).toBeUndefined();
});

it("an agent let in by its credential just before the host was removed is not attached", async () => {
  const { core } = harness;
  await core.agents.attachHost(hello("h1"), { parent: null });
  core.detachHost("h1");
  // Admission checked the credential; the removal's step runs before the hello's.
  const removal = core.hosts.removeHost("h1", "bob");
  const attach = core.agents
    .attachHost({ ...hello("h1"), credential: "sth_kept_secret" })
    .catch((error) => error);
  await removal;
  expect(String(await attach)).toContain("the host credential of h1 was revoked meanwhile");
  expect(core.read.hostOf("h1")).toBeUndefined();
});

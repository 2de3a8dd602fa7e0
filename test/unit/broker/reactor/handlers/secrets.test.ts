// Users' secrets as pure handlers (handlers/secrets.ts, test/helpers/handler-bench.ts), and what the
// broker does with them: a secret set anew keeps when it was made; a removal finds the owner's own
// only; a submit whose `credentials` names no secret of its owner's is refused naming the field;
// an attempt's start carries the values of the secrets its job names, and nothing else does.

import { describe, expect, it } from "vitest";
import { InvalidRequestError, NotFoundError } from "../../../../../src/broker/reactor/errors.ts";
import { startMessage } from "../../../../../src/broker/reactor/handlers/attempts.ts";
import { removeSecret, setSecret } from "../../../../../src/broker/reactor/handlers/secrets.ts";
import { withStartSecrets } from "../../../../../src/broker/reactor/handlers/start-secrets.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { updateJob } from "../../../../../src/broker/reactor/handlers/update.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { newAttempt } from "../../../../../src/common/model/new-records.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

const KEYS = { accessKeyId: "AKIAREAD", secretAccessKey: "s3cr3t" };

function submit(bench: HandlerBench, owner: string, spec: Record<string, unknown>) {
  return bench.run((step) => submitJob(step, { id: "9", spec: validateJobSpec(spec), owner, inputs: [] }))
    .result;
}

const NAMING = {
  command: "work",
  inputs: [{ url: "s3://data/in.nc", credentials: "read" }, { url: "s3://data/other.nc" }],
  outputs: ["kept", { path: "o.csv", to: "s3://results/o.csv", credentials: "write" }],
};

describe("a secret set and removed", () => {
  it("is new the first time, replaced after, keeping when it was made; each set is one put", () => {
    const bench = new HandlerBench();
    const first = bench.run((step) => setSecret(step, "alice", "read", KEYS)).result;
    expect(first).toStrictEqual({
      created: true,
      secret: { name: "read", createdAt: 1_000_000, updatedAt: 1_000_000 },
    });
    bench.now = 2_000_000;
    const again = bench.run((step) =>
      setSecret(step, "alice", "read", { ...KEYS, region: "eu-west-1" }),
    ).result;
    expect(again).toStrictEqual({
      created: false,
      secret: { name: "read", createdAt: 1_000_000, updatedAt: 2_000_000 },
    });
    expect(bench.state.secrets.get("alice", "read")?.value).toStrictEqual({ ...KEYS, region: "eu-west-1" });
    expect(bench.recorded.map((change) => change.op)).toStrictEqual(["putSecret", "putSecret"]);
  });

  it("is removed for its owner only; another's of that name is not found, and nothing is written", () => {
    const bench = new HandlerBench();
    bench.run((step) => setSecret(step, "alice", "read", KEYS));
    expect(() => bench.run((step) => removeSecret(step, "bob", "read"))).toThrow(
      new NotFoundError("no secret read"),
    );
    expect(bench.recorded).toHaveLength(1);
    const removed = bench.run((step) => removeSecret(step, "alice", "read")).result;
    expect(removed).toStrictEqual({ name: "read", createdAt: 1_000_000, updatedAt: 1_000_000 });
    expect(bench.state.secrets.get("alice", "read")).toBeUndefined();
    expect(bench.recorded.at(-1)).toStrictEqual({ op: "deleteSecret", owner: "alice", name: "read" });
  });

  it("is taken back, set or removed, by a step that fails after", () => {
    const bench = new HandlerBench();
    bench.run((step) => setSecret(step, "alice", "read", KEYS));
    const failing = (change: Parameters<typeof bench.run>[0]) => () =>
      bench.run((step) => {
        change(step);
        throw new Error("the step fails");
      });
    expect(failing((step) => setSecret(step, "alice", "read", { ...KEYS, region: "x" }))).toThrow(
      "the step fails",
    );
    expect(failing((step) => setSecret(step, "alice", "new", KEYS))).toThrow("the step fails");
    expect(failing((step) => removeSecret(step, "alice", "read"))).toThrow("the step fails");
    expect(bench.state.secrets.of("alice").map(({ name, value }) => ({ name, value }))).toStrictEqual([
      { name: "read", value: KEYS },
    ]);
    expect(bench.recorded).toHaveLength(1);
  });

  it("never shows up in a listing with its value", () => {
    const bench = new HandlerBench();
    bench.run((step) => setSecret(step, "alice", "b", KEYS));
    bench.run((step) => setSecret(step, "alice", "a", KEYS));
    bench.run((step) => setSecret(step, "bob", "c", KEYS));
    expect(bench.state.secrets.of("alice").map((each) => each.name)).toStrictEqual(["a", "b"]);
  });
});

describe("a submit naming credentials", () => {
  it.each<[string, string[], string | null]>([
    ["both secrets its owner's", ["read", "write"], null],
    ["the output's missing", ["read"], "outputs[1].credentials"],
    ["neither: the first named", ["write2"], "inputs[0].credentials"],
  ])("%s", (_, names, field) => {
    const bench = new HandlerBench();
    for (const name of names) bench.run((step) => setSecret(step, "alice", name, KEYS));
    // Another user's secrets of those names count for nothing.
    bench.run((step) => setSecret(step, "bob", "read", KEYS));
    bench.run((step) => setSecret(step, "bob", "write", KEYS));
    if (field === null) expect(submit(bench, "alice", NAMING).id).toBe("9");
    else {
      const name = field.startsWith("inputs") ? "read" : "write";
      expect(() => submit(bench, "alice", NAMING)).toThrow(
        new InvalidRequestError(field, `you have no secret ${name} (steward secret set ${name})`),
      );
    }
  });

  it("is not refused by an update once its secret is gone", () => {
    const bench = new HandlerBench();
    bench.run((step) => setSecret(step, "alice", "read", KEYS));
    bench.run((step) => setSecret(step, "alice", "write", KEYS));
    submit(bench, "alice", NAMING);
    bench.run((step) => removeSecret(step, "alice", "read"));
    expect(() =>
      bench.run((step) => updateJob(step, { id: "9", update: { priority: 5 }, by: "alice" })),
    ).not.toThrow();
  });
});

describe("an attempt's start", () => {
  it("carries the values of the owner's secrets its job names, by name; the names stay on the entries", () => {
    const bench = new HandlerBench();
    bench.run((step) => setSecret(step, "alice", "read", KEYS));
    bench.run((step) => setSecret(step, "alice", "write", { ...KEYS, sessionToken: "tok" }));
    bench.run((step) => setSecret(step, "alice", "unused", { ...KEYS, accessKeyId: "AKIAUNUSED" }));
    const job = submit(bench, "alice", NAMING);
    const message = withStartSecrets(
      startMessage(job, newAttempt({ ...job.tasks[0], attempts: 1 }, ["h1"], bench.now)),
      job,
      bench.state.secrets,
    );
    expect(message.secrets).toStrictEqual({ read: KEYS, write: { ...KEYS, sessionToken: "tok" } });
    expect(message.urlInputs).toStrictEqual([
      { url: "s3://data/in.nc", as: "in.nc", credentials: "read" },
      { url: "s3://data/other.nc", as: "other.nc" },
    ]);
    expect(message.urlOutputs).toStrictEqual([
      { path: "o.csv", to: "s3://results/o.csv", credentials: "write" },
    ]);
    // The job's record holds the names only.
    expect(JSON.stringify(job.record)).not.toContain("s3cr3t");
  });

  it("leaves out a secret removed since the submit, and has no secrets for a job that names none", () => {
    const bench = new HandlerBench();
    bench.run((step) => setSecret(step, "alice", "read", KEYS));
    bench.run((step) => setSecret(step, "alice", "write", KEYS));
    const job = submit(bench, "alice", NAMING);
    bench.run((step) => removeSecret(step, "alice", "write"));
    const attempt = newAttempt({ ...job.tasks[0], attempts: 1 }, ["h1"], bench.now);
    expect(withStartSecrets(startMessage(job, attempt), job, bench.state.secrets).secrets).toStrictEqual({
      read: KEYS,
    });
    const plain = submit(new HandlerBench(), "alice", { command: "work", inputs: [{ url: "s3://data/x" }] });
    const start = startMessage(plain, newAttempt({ ...plain.tasks[0], attempts: 1 }, ["h1"], bench.now));
    expect(withStartSecrets(start, plain, bench.state.secrets)).toBe(start);
  });
});

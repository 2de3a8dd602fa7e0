// What admins ask of tokens, and a joining host's credential (handlers/tokens.ts), as pure handlers
// (test/helpers/handler-bench.ts): a token id taken refuses a new one; a revocation finds the token
// by id and kind, revokes once, takes a join token's host credentials with it and disconnects the
// hosts whose credential goes; a host's new credential revokes its earlier ones not revoked yet.

import { describe, expect, it } from "vitest";
import { ConflictError, NotFoundError } from "../../../../../src/broker/reactor/errors.ts";
import {
  createToken,
  issueHostCredential,
  revokeToken,
} from "../../../../../src/broker/reactor/handlers/tokens.ts";
import type { TokenKind } from "../../../../../src/common/model/records.ts";
import { type NewToken, newTokenOf } from "../../../../../src/common/model/tokens.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/** What `run` throws: its class and message. */
function thrown(run: () => unknown): { type: string; message: string } {
  try {
    run();
  } catch (error) {
    return { type: (error as Error).constructor.name, message: (error as Error).message };
  }
  return { type: "none", message: "" };
}

/** A token of `kind` made by an admin in `bench`. */
function made(bench: HandlerBench, kind: TokenKind, token: NewToken = newTokenOf(kind)) {
  return bench.run((step) =>
    createToken(step, {
      token,
      subject: kind === "api" ? "alice" : "default",
      role: kind === "api" ? "user" : null,
      pool: null,
      createdBy: "admin",
      expiresAt: null,
    }),
  ).result;
}

/** A host credential of `host` issued in `bench` under `parent`. */
const joined = (bench: HandlerBench, host: string, parent: string | null) =>
  bench.run((step) => issueHostCredential(step, host, "default", parent, newTokenOf("host"))).result;

describe("a token made", () => {
  it("is refused when its id is taken, naming it; nothing is written", () => {
    const bench = new HandlerBench();
    const token = newTokenOf("api");
    made(bench, "api", token);
    const changes = bench.recorded.length;
    expect(thrown(() => made(bench, "api", { ...newTokenOf("api"), id: token.id }))).toEqual({
      type: ConflictError.name,
      message: `a token ${token.id} exists already`,
    });
    expect(bench.recorded.length).toBe(changes);
  });
});

describe("a revocation", () => {
  it("is not found for an id not known, or a token of another kind, naming the kinds asked", () => {
    const bench = new HandlerBench();
    const api = made(bench, "api");
    expect(thrown(() => bench.run((step) => revokeToken(step, "nope", ["api"])))).toEqual({
      type: NotFoundError.name,
      message: "no api token nope",
    });
    expect(thrown(() => bench.run((step) => revokeToken(step, api.id, ["join", "host"])))).toEqual({
      type: NotFoundError.name,
      message: `no join or host token ${api.id}`,
    });
    expect(bench.state.tokens.get(api.id)?.revokedAt).toBeNull();
  });

  it("revokes once: a token revoked already is answered as it is, nothing written", () => {
    const bench = new HandlerBench();
    const api = made(bench, "api");
    bench.run((step) => revokeToken(step, api.id, ["api"]));
    const at = bench.now;
    bench.now += 60_000;
    const changes = bench.recorded.length;
    const again = bench.run((step) => revokeToken(step, api.id, ["api"]));
    expect(again.result.revokedAt).toBe(at);
    expect(again.changes).toEqual([]);
    expect(bench.recorded.length).toBe(changes);
  });

  it("of an API token disconnects no host; of a host credential, its host", () => {
    const bench = new HandlerBench();
    const api = made(bench, "api");
    expect(bench.run((step) => revokeToken(step, api.id, ["api"])).effects).toEqual([]);
    const credential = joined(bench, "h1", null);
    expect(bench.run((step) => revokeToken(step, credential.id, ["host"])).effects).toEqual([
      { kind: "disconnect", host: "h1" },
    ]);
  });

  it("of a join token revokes the host credentials given under it not revoked yet, disconnecting their hosts", () => {
    const bench = new HandlerBench();
    const join = made(bench, "join");
    const first = joined(bench, "h1", join.id);
    bench.now += 1000;
    // h1 joins again: its first credential is revoked then.
    joined(bench, "h1", join.id);
    const h2 = joined(bench, "h2", join.id);
    const other = joined(bench, "h3", null);
    bench.now += 1000;
    const revoked = bench.run((step) => revokeToken(step, join.id, ["join"]));
    expect(revoked.effects).toEqual([
      { kind: "disconnect", host: "h1" },
      { kind: "disconnect", host: "h2" },
    ]);
    expect(revoked.changes.map((change) => change.op === "putToken" && change.token.subject)).toEqual([
      "default",
      "h1",
      "h2",
    ]);
    expect(bench.state.tokens.get(first.id)?.revokedAt).toBe(bench.now - 1000);
    expect(bench.state.tokens.get(h2.id)?.revokedAt).toBe(bench.now);
    expect(bench.state.tokens.get(other.id)?.revokedAt).toBeNull();
  });
});

describe("a host credential issued", () => {
  it("revokes the host's earlier credentials not revoked yet, and names its join token, or none", () => {
    const bench = new HandlerBench();
    const join = made(bench, "join");
    const first = joined(bench, "h1", null);
    expect(first).toMatchObject({ kind: "host", subject: "h1", parent: null, createdBy: "join token" });
    bench.now += 1000;
    const second = joined(bench, "h1", join.id);
    expect(second).toMatchObject({ parent: join.id, createdBy: join.id });
    bench.now += 1000;
    const third = bench.run((step) =>
      issueHostCredential(step, "h1", "default", join.id, newTokenOf("host")),
    );
    // Only the second is revoked now: the first keeps the time it was revoked.
    expect(third.changes.map((change) => change.op === "putToken" && change.token.id)).toEqual([
      second.id,
      third.result.id,
    ]);
    expect(bench.state.tokens.get(first.id)?.revokedAt).toBe(bench.now - 1000);
  });
});

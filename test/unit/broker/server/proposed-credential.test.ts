// A joining agent makes its host credential itself, keeps it, and proposes it in its hello; the
// server keeps that one. A server that commits the credential and stops before its welcome reaches
// the agent has still given the agent the credential: the next server lets the agent in by it,
// where a server-made credential would have been lost with the welcome and the host name refused
// to the join token alone. Real SQLite store, the gateway's admission rule.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { admitAgent } from "../../../../src/broker/server/agent-admission.ts";
import { newTokenOf, presentedToken, secretHash } from "../../../../src/common/model/tokens.ts";
import type { HelloMessage } from "../../../../src/common/protocol/messages.ts";
import { Harness, hello } from "../../../helpers/core-harness.ts";

const JOIN_TOKEN = "j";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

function admission(message: HelloMessage) {
  return admitAgent(message, {
    adminToken: "",
    joinToken: JOIN_TOKEN,
    tokens: harness.core.read.tokens,
    now: harness.now,
  });
}

/** A hello as the gateway handles it: admitted, then attached (with a credential when it joins). */
async function join(message: HelloMessage) {
  const admitted = admission(message);
  if (!admitted.admitted) throw new Error(admitted.reason);
  return harness.core.agents.attachHost(message, admitted.issue ?? undefined);
}

describe("a host credential the agent proposes", () => {
  it("is the one kept, and lets the agent in after a server that never sent the welcome", async () => {
    const proposed = newTokenOf("host");
    const first = { ...hello("h1"), credential: proposed.text };
    expect(admission(first)).toStrictEqual({ admitted: true, issue: { parent: null } });
    const { credential } = await join(first);
    expect(credential).toBe(proposed.text);
    expect(harness.core.read.tokens.get(proposed.id)).toMatchObject({
      kind: "host",
      subject: "h1",
      hash: secretHash(proposed.secret),
      revokedAt: null,
    });
    // The welcome is lost with the server; the next one starts from the same store.
    await harness.restart();
    const again = { ...hello("h1"), credential: proposed.text };
    expect(admission(again)).toStrictEqual({ admitted: true, issue: null });
    expect((await join(again)).credential).toBeUndefined();
    // Without it, the join token alone still cannot take over the host.
    const refused = admission(hello("h1"));
    expect(refused.admitted).toBe(false);
    expect(refused.admitted ? "" : refused.reason).toContain("host h1 has joined before");
  });

  it("is replaced by a new one when its id is taken, or when it is not a host credential", async () => {
    const taken = newTokenOf("host");
    await join({ ...hello("h1"), credential: taken.text });
    // Another host proposes a credential with the same id and another secret.
    const sameId = `sth_${taken.id}_${"0".repeat(48)}`;
    const second = await join({ ...hello("h2"), credential: sameId });
    expect(second.credential).not.toBe(sameId);
    const issued = presentedToken(second.credential ?? "", "host");
    expect(issued?.id).not.toBe(taken.id);
    expect(harness.core.read.tokens.get(taken.id)?.subject).toBe("h1");
    expect(harness.core.read.tokens.credentialOf("h2", harness.now)?.id).toBe(issued?.id);
    // An API token's text, and text that is no token at all.
    for (const [name, text] of [
      ["h3", newTokenOf("api").text],
      ["h4", "not a token"],
    ]) {
      const joined = await join({ ...hello(name), credential: text });
      expect(joined.credential).toMatch(/^sth_[0-9a-f]{10}_[0-9a-f]{48}$/);
      expect(joined.credential).not.toBe(text);
    }
  });

  it("is not taken from an agent let in by a credential it already holds", async () => {
    const kept = newTokenOf("host");
    await join({ ...hello("h1"), credential: kept.text });
    const { credential } = await join({ ...hello("h1"), credential: kept.text });
    expect(credential).toBeUndefined();
    expect(harness.core.read.tokens.credentialsOf("h1").map((token) => token.id)).toStrictEqual([kept.id]);
  });
});

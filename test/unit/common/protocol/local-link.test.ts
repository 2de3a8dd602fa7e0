// The in-process link between `steward up`'s server and its own agents (src/common/protocol/local-link.ts):
// the agent's end opens a turn later, messages arrive in the order sent and never in the turn they
// were sent in, a ping is answered by a pong, and a close reaches both ends after what was sent before it.

import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { LINK_STATES, localLink } from "../../../../src/common/protocol/local-link.ts";

function heard(end: ReturnType<typeof localLink>[number]): string[] {
  const events: string[] = [];
  end.on("open", () => events.push("open"));
  end.on("message", (data) => events.push(`message ${String(data)}`));
  end.on("pong", () => events.push("pong"));
  end.on("close", (code) => events.push(`close ${code}`));
  return events;
}

describe("a local link", () => {
  it("opens the agent's end a turn later, with its listeners on by then", async () => {
    const [agent, server] = localLink();
    const events = heard(agent);
    expect(agent.readyState).toBe(LINK_STATES.CONNECTING);
    await nextTurn();
    expect(events).toEqual(["open"]);
    expect(agent.readyState).toBe(LINK_STATES.OPEN);
    expect(server.readyState).toBe(LINK_STATES.OPEN);
  });

  it("delivers messages both ways in the order sent, never within the sender's turn", async () => {
    const [agent, server] = localLink();
    const atAgent = heard(agent);
    const atServer = heard(server);
    await nextTurn();
    agent.send("hello");
    agent.send("report 1");
    server.send("welcome");
    agent.send("report 2");
    expect(atServer).toEqual([]);
    await nextTurn();
    expect(atServer).toEqual(["message hello", "message report 1", "message report 2"]);
    expect(atAgent).toEqual(["open", "message welcome"]);
  });

  it("answers a ping with a pong", async () => {
    const [agent] = localLink();
    const events = heard(agent);
    await nextTurn();
    agent.ping();
    await nextTurn();
    expect(events).toEqual(["open", "pong"]);
  });

  it("closes both ends after what was sent before the close, and sends nothing after it", async () => {
    const [agent, server] = localLink();
    const atAgent = heard(agent);
    const atServer = heard(server);
    await nextTurn();
    agent.send("last words");
    server.close(4003, "standby");
    expect(server.readyState).toBe(LINK_STATES.CLOSING);
    agent.send("too late");
    await nextTurn();
    expect(atServer).toEqual(["message last words", "close 4003"]);
    expect(atAgent).toEqual(["open", "close 4003"]);
    expect(agent.readyState).toBe(LINK_STATES.CLOSED);
    // Closing again, or terminating, does nothing more.
    agent.terminate();
    await nextTurn();
    expect(atAgent).toEqual(["open", "close 4003"]);
  });

  it("terminated before it opened: never opens, closes with 1006", async () => {
    const [agent, server] = localLink();
    const events = heard(agent);
    server.terminate();
    await nextTurn();
    expect(events).toEqual(["close 1006"]);
  });
});

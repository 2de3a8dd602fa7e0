import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, test } from "vitest";
import { BATCH_MAX_BYTES, BATCH_MAX_MESSAGES } from "../../../../src/common/protocol/messages.ts";
import { TurnFrames } from "../../../../src/common/protocol/turn-frames.ts";

function recorder() {
  const texts: string[] = [];
  return {
    texts,
    frames: new TurnFrames((text) => texts.push(text)),
    parsed: () => texts.map((t) => JSON.parse(t)),
  };
}

const ack = (seq: number) => ({ type: "ack", seq });

describe("TurnFrames: the messages of one turn as one frame", () => {
  test("nothing leaves before the turn is over; then one batch, in order", async () => {
    const { frames, texts, parsed } = recorder();
    frames.add(ack(1));
    frames.add(ack(2));
    frames.add(ack(3));
    expect(texts).toEqual([]);
    await nextTurn();
    expect(parsed()).toEqual([{ type: "batch", messages: [ack(1), ack(2), ack(3)] }]);
  });

  test("one message alone goes as itself", async () => {
    const { frames, parsed } = recorder();
    frames.add(ack(1));
    await nextTurn();
    expect(parsed()).toEqual([ack(1)]);
  });

  test("each connection's messages go in a frame of its own; the next turn's in the next frame", async () => {
    const a = recorder();
    const b = recorder();
    a.frames.add(ack(1));
    b.frames.add(ack(2));
    a.frames.add(ack(3));
    await nextTurn();
    a.frames.add(ack(4));
    await nextTurn();
    expect(a.parsed()).toEqual([{ type: "batch", messages: [ack(1), ack(3)] }, ack(4)]);
    expect(b.parsed()).toEqual([ack(2)]);
  });

  test("flush sends what waits at once, and nothing twice", async () => {
    const { frames, parsed } = recorder();
    frames.add(ack(1));
    frames.flush();
    expect(parsed()).toEqual([ack(1)]);
    await nextTurn();
    expect(parsed()).toEqual([ack(1)]);
  });

  test(`at most ${BATCH_MAX_MESSAGES} messages a batch`, async () => {
    const { frames, parsed } = recorder();
    for (let seq = 1; seq <= BATCH_MAX_MESSAGES + 1; seq++) frames.add(ack(seq));
    await nextTurn();
    const sent = parsed();
    expect(sent).toHaveLength(2);
    expect(sent[0].messages).toHaveLength(BATCH_MAX_MESSAGES);
    expect(sent[1]).toEqual(ack(BATCH_MAX_MESSAGES + 1));
  });

  test("a new batch before the text would pass the byte limit; one big message still goes", async () => {
    const { frames, texts } = recorder();
    const big = { type: "log", data: "x".repeat(BATCH_MAX_BYTES / 2) };
    frames.add(big);
    frames.add(big);
    frames.add({ type: "log", data: "y".repeat(BATCH_MAX_BYTES + 10) });
    await nextTurn();
    expect(texts.map((text) => JSON.parse(text).type)).toEqual(["log", "log", "log"]);
    expect(texts.every((text, i) => i === 2 || text.length <= BATCH_MAX_BYTES)).toBe(true);
  });
});

// A turn's messages between server and agent go as one `batch` frame, where the other end said it
// reads them (hello's and welcome's `batches`); to an end that did not (an older release), each
// message goes alone as before. The server's side: the real server with hand-driven agent
// connections, one reading batches and one not. The agent's side: the real agent with a stand-in
// server, of the present release and of an older one.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import {
  PROTOCOL_VERSION,
  type ReportMessage,
  type ServerMessage,
  type StartMessage,
} from "../../src/common/protocol/messages.ts";
import { rawHello } from "../helpers/raw-agent.ts";
import {
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

type Frame = ServerMessage;

let server: (StewardProcess & { joinToken: string }) | undefined;
const work = tempDir("steward-batches-");

beforeAll(async () => {
  server = await startServerProcess({ hostTimeoutSeconds: 60 });
});

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data ?? "", work);
});

/** A hand-driven agent connection: its welcome, then every frame the server sends it, as received. */
async function connect(name: string, batches: boolean, slots: number) {
  const s = server!;
  const { ws, answer: welcome } = await rawHello(s.url, {
    name,
    token: s.joinToken,
    slots,
    labels: { who: name },
    batches,
  });
  // Nothing follows the welcome before a job is submitted (the tests submit after this).
  const frames: Frame[] = [welcome];
  ws.on("message", (data) => frames.push(JSON.parse(String(data)) as Frame));
  return { ws, frames, welcome };
}

/** The messages of the frames, batches opened, in order. */
function messagesOf(frames: Frame[]) {
  return frames.flatMap((frame) => (frame.type === "batch" ? frame.messages : [frame]));
}

function startsOf(frames: Frame[]): StartMessage[] {
  return messagesOf(frames).filter((message): message is StartMessage => message.type === "start");
}

/** Submits a `sleep 1000` array of `count` tasks for the agent labelled `who`; its id and starts once all came. */
async function submitFor(agent: { frames: Frame[] }, who: string, count: number) {
  const { id } = await api(server!, "POST", "/api/v1/jobs", {
    command: "sleep 1000",
    array: { count },
    requirements: `host.labels.who == "${who}"`,
  });
  const starts = await waitFor(`${count} starts`, () => {
    const all = startsOf(agent.frames);
    return all.length === count ? all : null;
  });
  return { id, starts };
}

function report(seq: number, start: StartMessage, kind: "started" | "ended"): ReportMessage {
  const ref = { jobId: start.jobId, taskIndex: start.taskIndex, attempt: start.attempt };
  return {
    type: "report",
    seq,
    event:
      kind === "started"
        ? { kind, ...ref, pid: 1000 + start.taskIndex }
        : { kind, ...ref, outcome: "succeeded", exitCode: 0, reason: null, outputs: [] },
  };
}

describe("the server", () => {
  it("sends an agent that reads batches a turn's starts and acknowledgements as one frame, and takes its batch of reports in order", async () => {
    const s = server!;
    const agent = await connect("batching", true, 4);
    try {
      expect(agent.welcome).toMatchObject({ type: "welcome", batches: true });
      const { id, starts } = await submitFor(agent, "batching", 4);
      // Placed in one pass: the four starts left in one frame.
      const startFrames = agent.frames.filter(
        (frame) => frame.type === "start" || (frame.type === "batch" && frame.messages[0].type === "start"),
      );
      expect(startFrames).toHaveLength(1);
      expect(startFrames[0]).toMatchObject({ type: "batch" });
      expect(starts.map((start) => start.taskIndex).sort()).toEqual([0, 1, 2, 3]);

      // Six reports in one frame: four started, then two of them ended.
      const reports = [
        ...starts.map((start, i) => report(i + 1, start, "started")),
        report(5, starts[0], "ended"),
        report(6, starts[1], "ended"),
      ];
      const before = agent.frames.length;
      agent.ws.send(JSON.stringify({ type: "batch", messages: reports }));
      const acks = await waitFor("six acknowledgements", () => {
        const seqs = messagesOf(agent.frames.slice(before)).flatMap((message) =>
          message.type === "ack" ? [message.seq] : [],
        );
        return seqs.length === 6 ? seqs : null;
      });
      expect(acks).toEqual([1, 2, 3, 4, 5, 6]);
      // Committed together: acknowledged in one frame.
      const ackFrames = agent.frames
        .slice(before)
        .filter((frame) => frame.type === "ack" || frame.type === "batch");
      expect(ackFrames).toHaveLength(1);
      const job = await getJob(s, id);
      const byIndex = new Map(job.tasks.map((task) => [task.index, task.state]));
      expect(byIndex.get(starts[0].taskIndex)).toBe("succeeded");
      expect(byIndex.get(starts[1].taskIndex)).toBe("succeeded");
      expect(byIndex.get(starts[2].taskIndex)).toBe("running");
      expect(byIndex.get(starts[3].taskIndex)).toBe("running");
      await api(s, "POST", `/api/v1/jobs/${id}/cancel`, {});
    } finally {
      agent.ws.close();
    }
  });

  it("sends an agent that does not say it reads batches one message a frame, as before", async () => {
    const s = server!;
    const agent = await connect("older", false, 2);
    try {
      const { id, starts } = await submitFor(agent, "older", 2);
      const before = agent.frames.length;
      // Two reports in one write, each a frame of its own.
      agent.ws.send(JSON.stringify(report(1, starts[0], "started")));
      agent.ws.send(JSON.stringify(report(2, starts[1], "started")));
      await waitFor("two acknowledgements", () => agent.frames.length - before >= 2);
      expect(agent.frames.some((frame) => frame.type === "batch")).toBe(false);
      expect(agent.frames.slice(before)).toEqual([
        { type: "ack", seq: 1 },
        { type: "ack", seq: 2 },
      ]);
      await api(s, "POST", `/api/v1/jobs/${id}/cancel`, {});
    } finally {
      agent.ws.close();
    }
  });
});

/** A start of `command` for task `index` of job "1". */
function start(index: number, command: string): StartMessage {
  return {
    type: "start",
    jobId: "1",
    taskIndex: index,
    attempt: 1,
    owner: "admin",
    restarted: false,
    command,
    env: {},
    inputs: [],
    outputs: [],
    cpus: 1,
    timeLimitSeconds: null,
    graceSeconds: 1,
    checkpointIntervalSeconds: 60,
  };
}

interface AgentFrame {
  type: string;
  messages?: { type: string }[];
  batches?: boolean;
}

describe("the agent", () => {
  /**
   * A stand-in server that never acknowledges: it welcomes each hello (saying it reads batches or
   * not), sends `starts` after the first one as one batch, and keeps every frame the agent sends.
   */
  async function standIn(welcomeBatches: boolean, starts: StartMessage[]) {
    const http = createServer();
    const wss = new WebSocketServer({ server: http });
    const frames: AgentFrame[] = [];
    let hellos = 0;
    wss.on("connection", (ws) => {
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data)) as AgentFrame;
        frames.push(frame);
        if (frame.type !== "hello") return;
        ws.send(
          JSON.stringify({
            type: "welcome",
            v: PROTOCOL_VERSION,
            heartbeatSeconds: 60,
            kill: [],
            ...(welcomeBatches ? { batches: true } : {}),
          }),
        );
        if (hellos++ === 0) ws.send(JSON.stringify({ type: "batch", messages: starts }));
      });
    });
    await new Promise<void>((done) => http.listen(0, "127.0.0.1", done));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const reportsIn = (from: AgentFrame[]) =>
      from
        .flatMap((frame) => (frame.type === "batch" ? (frame.messages ?? []) : [frame]))
        .filter((message): message is ReportMessage => message.type === "report");
    return {
      url,
      frames,
      reportsIn,
      ended: () => reportsIn(frames).filter((message) => message.event.kind === "ended"),
      /** Drops every connection: the agent reconnects. */
      drop: () => {
        for (const client of wss.clients) client.terminate();
      },
      close: () =>
        new Promise<void>((done) => {
          for (const client of wss.clients) client.terminate();
          wss.close();
          http.close(() => done());
        }),
    };
  }

  it("says it reads batches, reads a batch of starts, and sends a server of an older release one message a frame", async () => {
    const older = await standIn(false, [start(0, "sleep 0.3"), start(1, "sleep 0.3")]);
    try {
      const agent = await startAgentProcess({ name: "to-older", servers: [older.url], joinToken: "t", work });
      try {
        await waitFor("both attempts ended", () => older.ended().length === 2, 20_000);
        expect(older.frames[0]).toMatchObject({ type: "hello", batches: true });
        expect(older.frames.some((frame) => frame.type === "batch")).toBe(false);
        const kinds = older
          .reportsIn(older.frames)
          .map(
            (message) =>
              `${message.event.kind} ${"taskIndex" in message.event ? message.event.taskIndex : ""}`,
          );
        expect(kinds.sort()).toEqual(["ended 0", "ended 1", "started 0", "started 1"]);
      } finally {
        await agent.stop();
      }
    } finally {
      await older.close();
    }
  });

  it("sends a server that reads batches the reports of a turn as one frame (those it sends again on reconnecting)", async () => {
    const present = await standIn(true, [start(0, "true"), start(1, "true")]);
    try {
      const agent = await startAgentProcess({
        name: "to-present",
        servers: [present.url],
        joinToken: "t",
        work,
      });
      try {
        await waitFor("both attempts ended", () => present.ended().length === 2, 20_000);
        const ends = present.ended().map((message) => message.seq);
        // Never acknowledged: the agent sends both ends again after its next hello, in one turn.
        const before = present.frames.length;
        present.drop();
        await waitFor("the ends sent again", () => present.frames.length >= before + 2, 20_000);
        const again = present.frames.slice(before);
        expect(again[0]).toMatchObject({ type: "hello", batches: true });
        expect(again[1].type).toBe("batch");
        expect(present.reportsIn([again[1]]).map((message) => message.seq)).toEqual(ends);
      } finally {
        await agent.stop();
      }
    } finally {
      await present.close();
    }
  });
});

// Checkpoints as state, as pure functions: (state, event) -> (changes, effects), with a fixed clock,
// no store, no blobs, no timers. A single-host task's commits make generations 1, 2, ...; a
// multi-node job's generation counts once every rank has its part; what is no longer kept is
// dropped, records in the same commit, blobs as an effect.

import { describe, expect, it } from "vitest";
import { ConflictError, InvalidRequestError } from "../../../../../src/broker/reactor/errors.ts";
import {
  checkpointBlobsDropped,
  checkpointObjectStored,
  commitCheckpoint,
} from "../../../../../src/broker/reactor/handlers/checkpoints.ts";
import { handle, Step } from "../../../../../src/broker/reactor/step.ts";
import { newestCompleteGeneration, retention } from "../../../../../src/broker/state/checkpoint-retention.ts";
import type { ClusterState } from "../../../../../src/broker/state/cluster-state.ts";
import { recoverState } from "../../../../../src/broker/state/recover.ts";
import { restartManifest } from "../../../../../src/broker/state/restart-manifest.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import type { CheckpointPart } from "../../../../../src/common/model/records.ts";
import type { CheckpointManifest } from "../../../../../src/common/protocol/messages.ts";
import { attempt, host, job, task } from "../../../../conformance/store-suite.ts";

const NOW = 1_700_000_100_000;
const sha = (letter: string) => letter.repeat(64);

/** A running job "j" (one task, attempt 1) on node-1, or a gang of `nodes` ranks on node-1..N, with `parts` recovered. */
function running(nodes = 1, parts: CheckpointPart[] = []): ClusterState {
  const hosts = Array.from({ length: nodes }, (_, rank) => `node-${rank + 1}`);
  const spec = validateJobSpec(nodes > 1 ? { command: "true", nodes } : { command: "true" });
  const generation = newestCompleteGeneration(parts, nodes);
  return recoverState(
    {
      jobs: [job("j", { state: "running", spec })],
      tasks: [
        task("j", 0, {
          state: "running",
          attempts: 1,
          checkpoint: generation === null ? null : { generation, bytes: 1, at: 1 },
        }),
      ],
      attempts: [
        attempt("j", 0, 1, { host: hosts[0], placement: hosts.map((name, rank) => ({ host: name, rank })) }),
      ],
      hosts: hosts.map((name) => host(name)),
      tokens: [],
      meta: {},
      checkpointParts: parts,
    },
    NOW,
  );
}

function step(state: ClusterState): Step {
  return new Step(state, NOW, () => 0.5);
}

function file(path: string, letter: string, bytes = 4) {
  return { path, sha256: sha(letter), bytes };
}

function stored(state: ClusterState, letter: string, ranks = [0], bytes = 4): Step {
  const each = step(state);
  checkpointObjectStored(each, { jobId: "j", taskIndex: 0, ranks, sha256: sha(letter), bytes });
  return each;
}

/** Runs `handler` in a step that throws after it: what it did is to be taken back. */
function thrownAfter(state: ClusterState, handler: (step: Step) => void): void {
  expect(() =>
    handle(
      state,
      NOW,
      (each) => {
        handler(each);
        throw new Error("after");
      },
      () => 0.5,
    ),
  ).toThrow("after");
}

function commit(state: ClusterState, manifest: CheckpointManifest, attemptNumber = 1) {
  const each = step(state);
  const result = commitCheckpoint(each, { jobId: "j", taskIndex: 0, attempt: attemptNumber, manifest });
  return { result, changes: each.changes, effects: each.effects };
}

describe("a single-host task's checkpoints", () => {
  it("an object stored is held in memory only: no change to commit", () => {
    const state = running();
    expect(stored(state, "a").changes).toStrictEqual([]);
    expect(state.jobs.get("j")?.checkpointsOf(0).pending.get(sha("a"))?.ranks).toStrictEqual(new Set([0]));
  });

  it("a commit naming an object not stored, or stored with another size, is refused and changes nothing", () => {
    const state = running();
    expect(() => commit(state, { files: [file("state", "a")] })).toThrow(ConflictError);
    stored(state, "a", [0], 3);
    expect(() => commit(state, { files: [file("state", "a", 4)] })).toThrow(
      "checkpoint object for state is missing: upload it first",
    );
    expect(state.jobs.get("j")?.tasks[0].checkpoint).toBeNull();
  });

  it("only the live attempt commits", () => {
    const state = running();
    stored(state, "a");
    expect(() => commit(state, { files: [file("state", "a")] }, 2)).toThrow(
      "attempt 2 of task 0 is not current: checkpoint ignored",
    );
  });

  it("the first commit is generation 1: its part and the task's restart point, nothing to drop", () => {
    const state = running();
    stored(state, "a");
    const { result, changes, effects } = commit(state, { files: [file("state", "a")] });
    expect(result).toStrictEqual({ generation: 1, bytes: 4, previous: null });
    const part: CheckpointPart = {
      jobId: "j",
      taskIndex: 0,
      rank: 0,
      generation: 1,
      attempt: 1,
      files: [file("state", "a")],
      bytes: 4,
      at: NOW,
    };
    const restartPoint = { generation: 1, bytes: 4, at: NOW };
    expect(changes).toStrictEqual([
      { op: "putTasks", tasks: [expect.objectContaining({ checkpoint: restartPoint })] },
      { op: "putCheckpointPart", part },
    ]);
    expect(effects).toStrictEqual([]);
    expect(restartManifest(state.jobs.get("j")!, 0)).toStrictEqual({ files: [file("state", "a")] });
  });

  it("the next commit replaces it: the old part goes in the same commit, its unnamed objects and those never committed as an effect", () => {
    const state = running();
    stored(state, "a");
    stored(state, "k");
    commit(state, { files: [file("state", "a"), file("kept", "k")] });
    // "b" is the new state; "x" was uploaded and never named (a partial checkpoint).
    stored(state, "b");
    stored(state, "x");
    const { result, changes, effects } = commit(state, { files: [file("state", "b"), file("kept", "k")] });
    expect(result).toStrictEqual({ generation: 2, bytes: 8, previous: 1 });
    expect(changes.map((change) => change.op)).toStrictEqual([
      "putTasks",
      "putCheckpointPart",
      "deleteCheckpointPart",
    ]);
    expect(changes[2]).toStrictEqual({
      op: "deleteCheckpointPart",
      jobId: "j",
      taskIndex: 0,
      rank: 0,
      generation: 1,
    });
    expect(effects).toStrictEqual([
      {
        kind: "dropCheckpointBlobs",
        drop: {
          jobId: "j",
          taskIndex: 0,
          objects: [sha("a"), sha("x")],
          manifests: [{ rank: null, generation: 1 }],
        },
      },
    ]);
  });

  it("an object being dropped must be uploaded again until the drop is done", () => {
    const state = running();
    stored(state, "a");
    commit(state, { files: [file("state", "a")] });
    stored(state, "b");
    const { effects } = commit(state, { files: [file("state", "b")] });
    expect(() => stored(state, "a")).toThrow(ConflictError);
    // Nor may a commit name it meanwhile.
    expect(() => commit(state, { files: [file("state", "a")] })).toThrow(ConflictError);
    const drop = effects[0].kind === "dropCheckpointBlobs" ? effects[0].drop : null;
    expect(drop?.objects).toStrictEqual([sha("a")]);
    const done = step(state);
    checkpointBlobsDropped(done, drop!);
    expect(done.changes).toStrictEqual([]);
    expect(stored(state, "a").changes).toStrictEqual([]);
    expect(commit(state, { files: [file("state", "a")] }).result.generation).toBe(3);
  });

  it("an upload of an object being dropped is refused, naming it, and is not taken as stored", () => {
    const state = running();
    stored(state, "a");
    commit(state, { files: [file("state", "a")] });
    stored(state, "b");
    commit(state, { files: [file("state", "b")] });
    const checkpoints = state.jobs.get("j")!.checkpointsOf(0);
    expect([...checkpoints.dropping]).toStrictEqual([sha("a")]);
    expect(() => stored(state, "a")).toThrow(
      `checkpoint object ${sha("a")} was being dropped: upload it again`,
    );
    expect(checkpoints.pending.has(sha("a"))).toBe(false);
    expect(checkpoints.storedObjects().has(sha("a"))).toBe(false);
  });

  it("an upload for a job or task not known is let go, nothing noted", () => {
    const state = running();
    for (const [jobId, taskIndex] of [
      ["k", 0],
      ["j", 1],
    ] as const) {
      const each = step(state);
      checkpointObjectStored(each, { jobId, taskIndex, ranks: [0], sha256: sha("a"), bytes: 4 });
      expect(each.changes).toStrictEqual([]);
    }
    expect(state.jobs.get("j")!.checkpointsOf(0).pending.size).toBe(0);
  });

  it("a commit releases the objects it names from those pending, and drops at once those uploaded and never named", () => {
    const state = running();
    stored(state, "a");
    stored(state, "x");
    const { effects } = commit(state, { files: [file("state", "a")] });
    const checkpoints = state.jobs.get("j")!.checkpointsOf(0);
    expect([...checkpoints.pending.keys()]).toStrictEqual([]);
    // No part is dropped, but "x" is: an effect of objects alone.
    expect(effects).toStrictEqual([
      {
        kind: "dropCheckpointBlobs",
        drop: { jobId: "j", taskIndex: 0, objects: [sha("x")], manifests: [] },
      },
    ]);
  });

  it("a part dropped whose objects the new one names still has its manifest dropped, no object with it", () => {
    const state = running();
    stored(state, "a");
    commit(state, { files: [file("state", "a")] });
    const { result, effects } = commit(state, { files: [file("state", "a")] });
    expect(result.generation).toBe(2);
    expect(effects).toStrictEqual([
      {
        kind: "dropCheckpointBlobs",
        drop: { jobId: "j", taskIndex: 0, objects: [], manifests: [{ rank: null, generation: 1 }] },
      },
    ]);
  });

  it("an upload taken back (its step threw) leaves nothing pending", () => {
    const state = running();
    thrownAfter(state, (each) =>
      checkpointObjectStored(each, { jobId: "j", taskIndex: 0, ranks: [0], sha256: sha("a"), bytes: 4 }),
    );
    expect(state.jobs.get("j")!.checkpointsOf(0).pending.size).toBe(0);
  });

  it("a commit taken back puts back what was pending and what was being dropped", () => {
    const state = running();
    stored(state, "a");
    commit(state, { files: [file("state", "a")] });
    stored(state, "b");
    commit(state, { files: [file("state", "b")] });
    stored(state, "c");
    const checkpoints = state.jobs.get("j")!.checkpointsOf(0);
    expect([...checkpoints.dropping]).toStrictEqual([sha("a")]);
    // The commit of "c" would release it and drop generation 2's "b".
    thrownAfter(state, (each) =>
      commitCheckpoint(each, {
        jobId: "j",
        taskIndex: 0,
        attempt: 1,
        manifest: { files: [file("state", "c")] },
      }),
    );
    expect([...checkpoints.dropping]).toStrictEqual([sha("a")]);
    expect([...checkpoints.pending.keys()]).toStrictEqual([sha("c")]);
    expect(state.jobs.get("j")!.tasks[0].checkpoint?.generation).toBe(2);
  });

  it("the blobs of a job no longer known dropped: nothing to note", () => {
    const state = running();
    const each = step(state);
    checkpointBlobsDropped(each, { jobId: "k", taskIndex: 0, objects: [sha("a")], manifests: [] });
    expect(each.changes).toStrictEqual([]);
  });

  it("a rank on a single-host job's manifest is refused past rank 0", () => {
    const state = running();
    expect(() => commit(state, { files: [], gang: { rank: 1, generation: 1 } })).toThrow(InvalidRequestError);
  });
});

describe("a multi-node job's checkpoints", () => {
  it("a manifest without its rank and generation is refused", () => {
    const state = running(2);
    expect(() => commit(state, { files: [] })).toThrow(
      "gang: a multi-node job's checkpoint names its rank and generation",
    );
    expect(() => commit(state, { files: [], gang: { rank: 2, generation: 1 } })).toThrow(InvalidRequestError);
  });

  it("a generation becomes the restart point once every rank has its part; older parts and objects go then", () => {
    const state = running(2);
    stored(state, "a", [0]);
    const first = commit(state, { files: [file("s", "a")], gang: { rank: 0, generation: 1 } });
    // Rank 1 has no part yet: no restart point, nothing dropped.
    expect(first.result).toStrictEqual({ generation: 1, bytes: 4, previous: null });
    expect(first.changes.map((change) => change.op)).toStrictEqual(["putCheckpointPart"]);
    expect(state.jobs.get("j")?.tasks[0].checkpoint).toBeNull();

    stored(state, "b", [1], 6);
    const second = commit(state, { files: [file("s", "b", 6)], gang: { rank: 1, generation: 1 } });
    expect(second.result).toStrictEqual({ generation: 1, bytes: 6, previous: null });
    expect(state.jobs.get("j")?.tasks[0].checkpoint).toStrictEqual({ generation: 1, bytes: 10, at: NOW });

    // Rank 0 goes on to generation 2; rank 1's upload for it is still pending when rank 0 commits.
    stored(state, "c", [0]);
    stored(state, "d", [1]);
    const ahead = commit(state, { files: [file("s", "c")], gang: { rank: 0, generation: 2 } });
    expect(ahead.result.previous).toBe(1);
    expect(ahead.effects).toStrictEqual([]);
    const job = state.jobs.get("j")!;
    expect(restartManifest(job, 0, 1)).toStrictEqual({
      files: [file("s", "b", 6)],
      gang: { rank: 1, generation: 1 },
    });

    const complete = commit(state, { files: [file("s", "d")], gang: { rank: 1, generation: 2 } });
    expect(complete.result).toStrictEqual({ generation: 2, bytes: 4, previous: 1 });
    expect(job.tasks[0].checkpoint).toStrictEqual({ generation: 2, bytes: 8, at: NOW });
    expect(complete.changes.filter((change) => change.op === "deleteCheckpointPart")).toStrictEqual([
      { op: "deleteCheckpointPart", jobId: "j", taskIndex: 0, rank: 0, generation: 1 },
      { op: "deleteCheckpointPart", jobId: "j", taskIndex: 0, rank: 1, generation: 1 },
    ]);
    expect(complete.effects).toStrictEqual([
      {
        kind: "dropCheckpointBlobs",
        drop: {
          jobId: "j",
          taskIndex: 0,
          objects: [sha("a"), sha("b")],
          manifests: [
            { rank: 0, generation: 1 },
            { rank: 1, generation: 1 },
          ],
        },
      },
    ]);
    expect(restartManifest(job, 0, 0)).toStrictEqual({
      files: [file("s", "c")],
      gang: { rank: 0, generation: 2 },
    });
  });

  it("an object uploaded again for another rank is pending for both; taken back, for the first only", () => {
    const state = running(2);
    stored(state, "z", [0]);
    const pending = () => state.jobs.get("j")!.checkpointsOf(0).pending.get(sha("z"));
    thrownAfter(state, (each) =>
      checkpointObjectStored(each, { jobId: "j", taskIndex: 0, ranks: [1], sha256: sha("z"), bytes: 4 }),
    );
    expect(pending()).toStrictEqual({ bytes: 4, ranks: new Set([0]) });
    stored(state, "z", [1]);
    expect(pending()).toStrictEqual({ bytes: 4, ranks: new Set([0, 1]) });
  });

  it("a rank committing its generation again replaces its part of it", () => {
    const state = running(2);
    stored(state, "a", [0]);
    commit(state, { files: [file("s", "a")], gang: { rank: 0, generation: 1 } });
    stored(state, "b", [0]);
    const again = commit(state, { files: [file("s", "b")], gang: { rank: 0, generation: 1 } });
    expect(again.result).toStrictEqual({ generation: 1, bytes: 4, previous: null });
    const parts = state.jobs.get("j")!.checkpointsOf(0).parts;
    expect(
      parts.map((part) => ({ rank: part.rank, generation: part.generation, files: part.files })),
    ).toStrictEqual([{ rank: 0, generation: 1, files: [file("s", "b")] }]);
  });

  it("an object one host uploaded for two ranks stays until both have committed", () => {
    const state = running(2);
    for (const [rank, letter] of [
      [0, "a"],
      [1, "b"],
    ] as const) {
      stored(state, letter, [rank]);
      commit(state, { files: [file("s", letter)], gang: { rank, generation: 1 } });
    }
    stored(state, "z", [0, 1]);
    stored(state, "c", [0]);
    commit(state, { files: [file("s", "c")], gang: { rank: 0, generation: 2 } });
    stored(state, "d", [1]);
    const { effects } = commit(state, { files: [file("s", "d")], gang: { rank: 1, generation: 2 } });
    // "z" was pending for ranks 0 and 1; both have committed since without naming it: it goes.
    expect(effects[0]?.kind === "dropCheckpointBlobs" && effects[0].drop.objects).toStrictEqual([
      sha("a"),
      sha("b"),
      sha("z"),
    ]);
  });

  it("a late part of a generation older than the restart point is not kept", () => {
    const state = running(2);
    for (const rank of [0, 1]) {
      stored(state, "a", [rank]);
      commit(state, { files: [file("s", "a")], gang: { rank, generation: 2 } });
    }
    stored(state, "b", [0]);
    const late = commit(state, { files: [file("s", "b")], gang: { rank: 0, generation: 1 } });
    expect(late.result).toStrictEqual({ generation: 1, bytes: 4, previous: 2 });
    expect(late.changes).toStrictEqual([]);
    expect(late.effects).toStrictEqual([
      {
        kind: "dropCheckpointBlobs",
        drop: { jobId: "j", taskIndex: 0, objects: [sha("b")], manifests: [{ rank: 0, generation: 1 }] },
      },
    ]);
  });

  it("recovery gives each task its parts back", () => {
    const part = (rank: number, generation: number): CheckpointPart => ({
      jobId: "j",
      taskIndex: 0,
      rank,
      generation,
      attempt: 1,
      files: [file("s", String(rank))],
      bytes: 4,
      at: 5,
    });
    const state = running(2, [part(0, 3), part(1, 3), part(0, 4)]);
    const job = state.jobs.get("j")!;
    expect(job.checkpointsOf(0).parts).toHaveLength(3);
    expect(restartManifest(job, 0, 1)).toStrictEqual({
      files: [file("s", "1")],
      gang: { rank: 1, generation: 3 },
    });
  });
});

describe("completeness and retention, pure", () => {
  it.each<[string, [number, number][], number, number | null]>([
    ["no parts", [], 2, null],
    ["one rank of two", [[0, 1]], 2, null],
    [
      "both ranks of 1, one of 2",
      [
        [0, 1],
        [1, 1],
        [0, 2],
      ],
      2,
      1,
    ],
    [
      "the newest complete, not the newest",
      [
        [0, 1],
        [1, 1],
        [0, 3],
        [1, 3],
        [1, 4],
      ],
      2,
      3,
    ],
    ["a single-host task: rank 0's newest", [[0, 5]], 1, 5],
    [
      "a rank past the job's is not counted",
      [
        [0, 1],
        [2, 1],
      ],
      2,
      null,
    ],
  ])("%s", (_, parts, ranks, expected) => {
    expect(
      newestCompleteGeneration(
        parts.map(([rank, generation]) => ({ rank, generation })),
        ranks,
      ),
    ).toBe(expected);
  });

  it("without a restart point every part is kept and only the committing rank's pending objects are released", () => {
    const part = { jobId: "j", taskIndex: 0, rank: 0, generation: 1, attempt: 1, files: [], bytes: 0, at: 0 };
    const pending = new Map([
      [sha("a"), { bytes: 1, ranks: new Set([0]) }],
      [sha("b"), { bytes: 1, ranks: new Set([1]) }],
    ]);
    const kept = retention([part], pending, 0, null);
    expect(kept.keep).toStrictEqual([part]);
    expect(kept.drop).toStrictEqual([]);
    expect(kept.dropObjects).toStrictEqual([sha("a")]);
    expect([...kept.pending.keys()]).toStrictEqual([sha("b")]);
  });
});

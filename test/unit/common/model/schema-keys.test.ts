// The keys a schema knows at a path of a file, read from the zod schema (what an unknown key's
// suggestion is chosen from): each wrapper opened, each kind of container followed by the right
// kind of path part, a union's forms together.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { jobSpecSchema } from "../../../../src/common/model/job-spec.ts";
import { knownKeysAt } from "../../../../src/common/model/schema-keys.ts";

const inner = z.strictObject({ a: z.number(), b: z.string() });

describe("knownKeysAt", () => {
  it.each<[string, z.ZodType, (string | number)[], string[]]>([
    ["a mapping at the top: its keys, in order", inner, [], ["a", "b"]],
    ["no mapping at the top: none", z.string(), [], []],
    ["an optional mapping is opened", inner.optional(), [], ["a", "b"]],
    ["a mapping with a default is opened", inner.default({ a: 1, b: "" }), [], ["a", "b"]],
    ["a mapping with a prefault is opened", inner.prefault({ a: 1, b: "" }), [], ["a", "b"]],
    ["a nullable mapping is opened", inner.nullable(), [], ["a", "b"]],
    ["a read-only mapping is opened", inner.readonly(), [], ["a", "b"]],
    ["a mapping with a catch is opened", inner.catch({ a: 1, b: "" }), [], ["a", "b"]],
    ["a transformed mapping: its input's keys", inner.transform((value) => value.a), [], ["a", "b"]],
    ["wrappers within wrappers are opened", inner.nullable().optional().default(null), [], ["a", "b"]],
    [
      "a union: the keys of each mapping it may be, each once",
      z.union([z.number(), inner, z.strictObject({ b: z.string(), c: z.string() })]),
      [],
      ["a", "b", "c"],
    ],
    ["a key of a mapping leads to its value", z.object({ x: inner }), ["x"], ["a", "b"]],
    ["a key the mapping lacks leads nowhere", z.object({ x: inner }), ["y"], []],
    ["a key a mapping only inherits leads nowhere", z.object({ x: inner }), ["toString"], []],
    ["an index into a mapping leads nowhere", z.object({ 0: inner }), [0], []],
    ["an index into a list leads to its element", z.array(inner), [3], ["a", "b"]],
    ["a key into a list leads nowhere", z.array(inner), ["3"], []],
    ["any key of a record leads to its values", z.record(z.string(), inner), ["anything"], ["a", "b"]],
    ["an index into a record leads nowhere", z.record(z.string(), inner), [0], []],
    ["a scalar leads nowhere", z.string(), ["a"], []],
    [
      "the path is followed to its end",
      z.object({ x: z.array(z.object({ y: inner })) }),
      ["x", 0, "y"],
      ["a", "b"],
    ],
    [
      "a path through a union follows each form that has it",
      z.union([z.object({ x: inner }), z.object({ x: z.strictObject({ c: z.number() }) }), z.array(inner)]),
      ["x"],
      ["a", "b", "c"],
    ],
    [
      "the job file: its resources",
      jobSpecSchema,
      ["resources"],
      ["cpus", "memoryMb", "gpus", "custom", "maxProcesses"],
    ],
    [
      "the job file: a mapping form of array (`array: N` or a mapping)",
      jobSpecSchema,
      ["array"],
      ["count", "parallel", "params", "paramsFile"],
    ],
    ["the job file: a dependency's mapping form", jobSpecSchema, ["dependsOn", 0], ["job", "when", "tasks"]],
  ])("%s", (_, schema, path, keys) => {
    expect(knownKeysAt(schema, path)).toEqual(keys);
  });
});

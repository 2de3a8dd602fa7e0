import { describe, expect, it } from "vitest";
import { nameMatcher } from "../../../../src/common/model/name-pattern.ts";

describe("nameMatcher", () => {
  const cases: [pattern: string, name: string, matches: boolean][] = [
    ["sweep", "sweep", true],
    ["sweep", "sweep-2", false],
    ["sweep", "Sweep", false],
    ["sweep*", "sweep", true],
    ["sweep*", "sweep-2", true],
    ["sweep*", "a-sweep", false],
    ["*sweep*", "a-sweep-b", true],
    ["run-?", "run-1", true],
    ["run-?", "run-10", false],
    ["a.b", "axb", false],
    ["a.b*", "a.bc", true],
    ["a+b(c)[d]", "a+b(c)[d]", true],
    ["*", "", true],
    ["x*y", "x\ny", true],
    ["ünï*", "ünïcode", true],
  ];
  it.each(cases)("%j against %j: %s", (pattern, name, matches) => {
    expect(nameMatcher(pattern)(name)).toBe(matches);
  });
});

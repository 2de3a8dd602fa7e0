// The key an unknown one was most likely meant to be: an alias first, then the same key but for
// case, `_` and `-`, then the nearest within the edits its length allows (1 up to 4 characters, 2
// up to 8, then 3; the first of equals), then a known key the typed one (4 characters or more)
// begins; and the edit distance it measures (optimal string alignment).

import { describe, expect, it } from "vitest";
import { editDistance, nearestKey } from "../../../../src/common/model/key-suggestion.ts";

describe("nearestKey", () => {
  it.each<[string, string, string[], Record<string, string>, string | null]>([
    ["4 characters: 1 edit", "abcd", ["abce"], {}, "abce"],
    ["4 characters: not 2", "abcd", ["abxy"], {}, null],
    ["5 characters: 2 edits", "abcde", ["abxye"], {}, "abxye"],
    ["5 characters: not 3", "abcde", ["axyze"], {}, null],
    ["8 characters: 2 edits", "abcdefgh", ["abcdefxy"], {}, "abcdefxy"],
    ["8 characters: not 3", "abcdefgh", ["abcdexyz"], {}, null],
    ["9 characters: 3 edits", "abcdefghi", ["abcdefxyz"], {}, "abcdefxyz"],
    ["9 characters: not 4", "abcdefghi", ["abcdewxyz"], {}, null],
    ["the edits allowed by the normalised length", "a_b_c_d_e", ["axyze"], {}, null],
    ["the nearer of two", "abcdef", ["abxyef", "abcxef"], {}, "abcxef"],
    ["the first of two as near", "abcd", ["abce", "abcf"], {}, "abce"],
    [
      "the same key but for case, `_` and `-`",
      "MAX_ATTEMPTS",
      ["maxAttempt", "maxAttempts"],
      {},
      "maxAttempts",
    ],
    ["every `_` and `-` left out", "time_limit-seconds", ["timeLimitSeconds"], {}, "timeLimitSeconds"],
    ["lower case: `ß` is not `ss`", "ß", ["ss"], {}, null],
    [
      "an alias first, normalised",
      "Memory",
      ["memoryMb"],
      { memory: "resources.memoryMb" },
      "resources.memoryMb",
    ],
    [
      "an alias written otherwise",
      "wall-time",
      ["name"],
      { wall_time: "timeLimitSeconds" },
      "timeLimitSeconds",
    ],
    ["no alias for another key", "colour", ["name"], { memory: "resources.memoryMb" }, null],
    ["a known key the typed one begins", "backoff", ["name", "backoffSeconds"], {}, "backoffSeconds"],
    ["4 characters begin one", "back", ["backoffSeconds"], {}, "backoffSeconds"],
    ["3 characters begin none", "bac", ["backoffSeconds"], {}, null],
    ["a key that ends with the typed one is not it", "seconds", ["backoffSeconds"], {}, null],
    ["no key", "anything", [], {}, null],
  ])("%s: %s -> %s", (_, typed, known, aliases, meant) => {
    expect(nearestKey(typed, known, aliases)).toBe(meant);
  });

  it("reads no aliases when given none", () => {
    expect(nearestKey("nme", ["name"])).toBe("name");
  });
});

describe("editDistance", () => {
  it.each<[string, string, number]>([
    ["", "", 0],
    ["abc", "", 3],
    ["", "abc", 3],
    ["abc", "abc", 0],
    ["a", "b", 1],
    ["abc", "abd", 1],
    ["abc", "xbc", 1],
    ["abc", "abcd", 1],
    ["abcd", "abc", 1],
    ["abc", "bc", 1],
    ["bc", "abc", 1],
    ["ab", "ba", 1],
    ["abcd", "abdc", 1],
    ["abcd", "bacd", 1],
    ["abcd", "badc", 2],
    ["ca", "abc", 3],
    ["ab", "ca", 2],
    ["abc", "cba", 2],
    ["aab", "aba", 1],
    ["aba", "aab", 1],
    ["kitten", "sitting", 3],
    ["saturday", "sunday", 3],
    ["flaw", "lawn", 2],
  ])("editDistance(%s, %s) = %i", (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
  });
});

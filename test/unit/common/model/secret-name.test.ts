// A secret's name: 1 to 64 letters, digits, `_`, `.` and `-`.

import { describe, expect, it } from "vitest";
import { SECRET_NAME, secretNameProblem } from "../../../../src/common/model/secret-name.ts";

describe("secretNameProblem", () => {
  it.each<[string, string | null]>([
    ["a", null],
    ["climate-read_2.prod", null],
    ["A".repeat(64), null],
    ["", "is empty"],
    ["A".repeat(65), "is 65 characters long: at most 64"],
    ["has space", "may hold only letters, digits, '_', '.' and '-'"],
    ["slash/name", "may hold only letters, digits, '_', '.' and '-'"],
    ["é", "may hold only letters, digits, '_', '.' and '-'"],
    ["new\nline", "may hold only letters, digits, '_', '.' and '-'"],
  ])("%j: %s", (name, problem) => {
    expect(secretNameProblem(name)).toBe(problem);
    expect(SECRET_NAME.test(name)).toBe(problem === null);
  });
});

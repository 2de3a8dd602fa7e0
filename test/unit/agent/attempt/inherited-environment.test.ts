import { describe, expect, it } from "vitest";
import {
  inheritedEnvironment,
  isStewardSetting,
} from "../../../../src/agent/attempt/inherited-environment.ts";

describe("isStewardSetting", () => {
  it.each([
    ["STEWARD_JOIN_TOKEN", true],
    ["STEWARD_TOKEN", true],
    ["STEWARD_URL", true],
    ["STEWARD_COMPILE_CACHE", true],
    ["STEWARD_LAUNCHER_CACHE", true],
    ["STEWARD_LAUNCHER", true],
    ["STEWARD_LOG_LEVEL", true],
    ["NODE_COMPILE_CACHE", true],
    ["PATH", false],
    ["HOME", false],
    ["PYTHONPATH", false],
    ["NODE_OPTIONS", false],
    ["MY_STEWARD_THING", false],
    ["steward_lower", false],
  ])("%s: %s", (name, expected) => {
    expect(isStewardSetting(name)).toBe(expected);
  });
});

describe("inheritedEnvironment", () => {
  it("keeps the rest of the agent's environment as it is, and drops unset entries", () => {
    expect(
      inheritedEnvironment({
        PATH: "/usr/bin",
        STEWARD_JOIN_TOKEN: "secret",
        LANG: "C.UTF-8",
        STEWARD_LOG_LEVEL: "debug",
        UNSET: undefined,
      }),
    ).toEqual({ PATH: "/usr/bin", LANG: "C.UTF-8" });
  });
});

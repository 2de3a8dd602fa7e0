// The files the agent finds beside its own code (the job SDKs it hands to jobs, the launchers it
// starts jobs with) are where it looks for them: a move of the agent's code that leaves one behind
// fails here, not in a job that cannot import the SDK.

import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { PYTHON_SDK_PATH, SDK_PATH } from "../../../src/agent/attempt/job-script.ts";
import {
  C_LAUNCHER_SOURCE,
  DEFAULT_LAUNCHER_CACHE,
  PERL_LAUNCHER,
  SHELL_LAUNCHER,
  SUPERVISOR,
} from "../../../src/agent/launcher/launcher.ts";

const ROOT = resolve(import.meta.dirname, "../../..");

describe("files the agent finds beside its code", () => {
  it("the JavaScript SDK is the checkout's src/common/sdk/index.js", () => {
    expect(SDK_PATH).toBe(join(ROOT, "src/common/sdk/index.js"));
    expect(existsSync(SDK_PATH)).toBe(true);
  });
  it("the Python SDK is the checkout's python/ folder", () => {
    expect(PYTHON_SDK_PATH).toBe(join(ROOT, "python"));
    expect(existsSync(join(PYTHON_SDK_PATH, "steward", "__init__.py"))).toBe(true);
  });
  it("every launcher's source is there, and compiled launchers are kept under the checkout's node_modules", () => {
    for (const path of [SHELL_LAUNCHER, SUPERVISOR, PERL_LAUNCHER, C_LAUNCHER_SOURCE])
      expect(existsSync(path), path).toBe(true);
    expect(DEFAULT_LAUNCHER_CACHE).toBe(join(ROOT, "node_modules/.cache/steward-launcher"));
  });
});

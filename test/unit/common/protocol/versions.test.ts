// The versions two Steward programs compare: which headers and messages count as another version,
// and the refusals' wording, naming both sides. The release is written once (package.json) and the
// Python package says the same.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ofAnotherVersion, PROTOCOL_VERSION } from "../../../../src/common/protocol/messages.ts";
import {
  agentLeavesServer,
  agentRefusal,
  clientRefusal,
  foreignApiPathVersion,
  foreignApiVersion,
  serverRefusal,
  stewardRelease,
} from "../../../../src/common/protocol/versions.ts";
import { ROOT } from "../../../helpers/steward.ts";

describe("which API versions are another's", () => {
  it.each([
    [undefined, null],
    [null, null],
    ["", null],
    ["1", null],
    [" 1 ", null],
    [["1"], null],
    ["2", "2"],
    ["0", "0"],
    ["v2", "v2"],
    [["3", "1"], "3"],
  ] as const)("header %j -> %j", (header, expected) => {
    expect(foreignApiVersion(header as string | string[] | null | undefined)).toBe(expected);
  });

  it.each([
    ["/api/v1/jobs", null],
    ["/api/v1", null],
    ["/api/v2/jobs", "2"],
    ["/api/v10/hosts", "10"],
    ["/api/v2", "2"],
    ["/healthz", null],
    ["/api/version", null],
    ["/api/v2x/jobs", null],
  ] as const)("path %s -> %j", (path, expected) => {
    expect(foreignApiPathVersion(path)).toBe(expected);
  });
});

describe("hellos and welcomes of another protocol version", () => {
  it.each([
    [{ type: "hello", v: PROTOCOL_VERSION }, "hello", null],
    [{ type: "hello", v: 2, release: "9.0.0" }, "hello", { version: "2", release: "9.0.0" }],
    [{ type: "hello", v: "2" }, "hello", { version: "2", release: undefined }],
    [{ type: "hello" }, "hello", null],
    [{ type: "hello", v: { nested: 1 } }, "hello", null],
    [{ type: "heartbeat", v: 2 }, "hello", null],
    [{ type: "welcome", v: 7, release: 5 }, "welcome", { version: "7", release: undefined }],
    [{ type: "welcome", v: 7 }, "hello", null],
    [null, "hello", null],
    ["hello", "hello", null],
  ] as const)("%j as a %s -> %j", (message, type, expected) => {
    expect(ofAnotherVersion(message, type)).toEqual(expected);
  });

  it("keeps what a peer names short", () => {
    const found = ofAnotherVersion({ type: "hello", v: "9".repeat(100), release: "r".repeat(500) }, "hello");
    expect(found?.version).toHaveLength(16);
    expect(found?.release).toHaveLength(64);
  });
});

describe("refusals name both sides", () => {
  const ours = { version: 1, release: "0.1.0" };
  const theirs = { version: "2", release: "9.0.0" };
  it.each([
    [
      clientRefusal(theirs, ours),
      "this client speaks Steward API version 2 (steward 9.0.0) and this server speaks API version 1 (steward 0.1.0): use a client of the server's release",
    ],
    [
      clientRefusal({ version: "2" }, ours),
      "this client speaks Steward API version 2 and this server speaks API version 1 (steward 0.1.0): use a client of the server's release",
    ],
    [
      serverRefusal("http://a:4780", theirs, ours),
      "the Steward server at http://a:4780 speaks API version 2 (steward 9.0.0) and this client speaks API version 1 (steward 0.1.0): use a client of the server's release",
    ],
    [
      agentRefusal(theirs, ours),
      "this agent speaks agent protocol version 2 (steward 9.0.0) and this server speaks version 1 (steward 0.1.0): run an agent of the server's release",
    ],
    [
      agentLeavesServer("http://a:4780", theirs, ours),
      "the Steward server at http://a:4780 speaks agent protocol version 2 (steward 9.0.0) and this agent speaks version 1 (steward 0.1.0): run an agent of the server's release",
    ],
  ])("%s", (message, expected) => {
    expect(message).toBe(expected);
  });
});

it("the release is package.json's, and the Python package says the same", () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  expect(stewardRelease()).toBe(pkg.version);
  const http = readFileSync(join(ROOT, "python/steward/_http.py"), "utf8");
  expect(http).toContain(`RELEASE = "${pkg.version}"`);
  const pyproject = readFileSync(join(ROOT, "python/pyproject.toml"), "utf8");
  expect(pyproject).toMatch(new RegExp(`^version = "${pkg.version.replaceAll(".", "\\.")}"$`, "m"));
});

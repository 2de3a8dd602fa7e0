// What a layer member's name means: a file, a whiteout, an opaque folder, or one refused.

import { describe, expect, it } from "vitest";
import { layerPath, rootRelative } from "../../../../src/agent/containers/whiteouts.ts";

describe("layerPath", () => {
  it.each([
    ["./etc/passwd", { kind: "plain", path: "etc/passwd" }],
    ["/etc/passwd", { kind: "plain", path: "etc/passwd" }],
    ["usr/bin/", { kind: "plain", path: "usr/bin" }],
    ["./", { kind: "plain", path: "" }],
    ["etc/.wh.motd", { kind: "whiteout", path: "etc/motd" }],
    ["./.wh.opt", { kind: "whiteout", path: "opt" }],
    ["var/cache/.wh..wh..opq", { kind: "opaque", path: "var/cache" }],
    [".wh..wh..opq", { kind: "opaque", path: "" }],
    ["a/x/../b", { kind: "plain", path: "a/b" }],
    ["etc/.whisper", { kind: "plain", path: "etc/.whisper" }],
  ])("%s", (name, meaning) => {
    expect(layerPath(name)).toStrictEqual(meaning);
  });

  it.each(["../etc/passwd", "a/../../b", "etc/.wh..", "etc/.wh."])("%s is refused", (name) => {
    expect(layerPath(name).kind).toBe("refused");
  });

  it("a name with a NUL leaves the root", () => {
    expect(rootRelative("a\0b")).toBeNull();
  });
});

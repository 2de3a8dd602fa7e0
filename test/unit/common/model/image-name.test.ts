// Image names as skopeo writes them: the two taken (oci-archive:, oci:) and those refused.

import { describe, expect, it } from "vitest";
import { containerHostPaths } from "../../../../src/common/model/container-spec.ts";
import { imageHostPath, parseImageName } from "../../../../src/common/model/image-name.ts";

describe("parseImageName", () => {
  it.each([
    ["oci-archive:/data/img.tar", { transport: "oci-archive", path: "/data/img.tar" }],
    ["oci-archive:img.tar", { transport: "oci-archive", path: "img.tar" }],
    ["oci:/data/layout", { transport: "oci", path: "/data/layout" }],
    ["oci:/data/layout:v1.2", { transport: "oci", path: "/data/layout", tag: "v1.2" }],
  ])("%s", (text, image) => {
    expect(parseImageName(text)).toStrictEqual({ image });
  });

  it.each([
    ["docker://debian:12", /docker:\/\/ images are not supported yet/],
    ["docker-archive:/x.tar", /docker-archive: images are not supported yet/],
    ["debian:12", /is not an image name: give oci-archive:PATH or oci:DIR\[:TAG\]/],
    ["oci-archive:", /the path is missing/],
    ["oci-archive:../img.tar", /leaves its folder/],
    ["oci-archive:/data/../etc/img.tar", /must not contain \.\./],
    ["oci:/data/layout:v/1", /tag "v\/1" is not a tag/],
    ["oci-archive:/a:b.tar", /may not hold a colon/],
  ])("%s is refused", (text, problem) => {
    const parsed = parseImageName(text);
    expect("problem" in parsed ? parsed.problem : "").toMatch(problem);
  });
});

describe("the host paths a container names", () => {
  it.each([
    ["an absolute archive", "oci-archive:/data/i.tar", [], ["/data/i.tar"]],
    ["an input", "oci-archive:i.tar", [], []],
    ["a layout and a mount", "oci:/data/l:v1", ["/ref"], ["/data/l", "/ref"]],
  ])("%s", (_, image, sources, paths) => {
    const parsed = parseImageName(image);
    expect("image" in parsed && imageHostPath(parsed.image)).toBe(
      paths[0] === undefined ? undefined : paths[0],
    );
    expect(containerHostPaths({ image, mounts: sources.map((source) => ({ source })) })).toStrictEqual(paths);
  });
});

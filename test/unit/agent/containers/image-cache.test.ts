// The host's unpacked images: one unpack per digest, also when asked twice at once and after a
// restart; an oci-archive and a layout folder of the same image are one; a damaged or missing
// blob fails naming the digest. Images made here with GNU tar.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { ImageCache } from "../../../../src/agent/containers/image-cache.ts";
import {
  imageEnvironment,
  manifestDigest,
  parseManifest,
} from "../../../../src/agent/containers/image-layout.ts";

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const made = mkdtempSync(join(tmpdir(), "steward-images-"));
  folders.push(made);
  return made;
}

function hex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** An OCI layout with one gzip layer holding hello.txt; answers the layout, its archive and the layer's digest. */
function makeImage(): { layout: string; archive: string; manifest: string; layer: string } {
  const base = folder();
  const content = join(base, "content");
  mkdirSync(content);
  writeFileSync(join(content, "hello.txt"), "from the image\n");
  const layout = join(base, "layout");
  mkdirSync(join(layout, "blobs", "sha256"), { recursive: true });
  const put = (bytes: Buffer) => {
    writeFileSync(join(layout, "blobs", "sha256", hex(bytes)), bytes);
    return { digest: `sha256:${hex(bytes)}`, size: bytes.length };
  };
  const layer = put(gzipSync(execFileSync("tar", ["-C", content, "-cf", "-", "."])));
  const config = put(Buffer.from(JSON.stringify({ config: { Env: ["PATH=/bin", "X=1"] } })));
  const manifest = put(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
        layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", ...layer }],
      }),
    ),
  );
  writeFileSync(
    join(layout, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", ...manifest }],
    }),
  );
  const archive = join(base, "image.tar");
  execFileSync("tar", ["-C", layout, "-cf", archive, "."]);
  return { layout, archive, manifest: manifest.digest, layer: layer.digest };
}

describe("ImageCache", () => {
  it("unpacks an image once for two attempts asking at once, and not again after a restart", async () => {
    const image = makeImage();
    const cacheDir = join(folder(), "images");
    const cache = new ImageCache(cacheDir);
    const [one, two] = await Promise.all([
      cache.image({ transport: "oci", path: image.layout }, "/nowhere"),
      cache.image({ transport: "oci-archive", path: image.archive }, "/nowhere"),
    ]);
    expect(cache.counters.unpacked).toBe(1);
    expect(one).toStrictEqual(two);
    expect(one.digest).toBe(image.manifest);
    expect(one.env).toStrictEqual({ PATH: "/bin", X: "1" });
    expect(readFileSync(join(one.rootfs, "hello.txt"), "utf8")).toBe("from the image\n");
    const restarted = new ImageCache(cacheDir);
    await restarted.image({ transport: "oci-archive", path: image.archive }, "/nowhere");
    expect(restarted.counters).toStrictEqual({ unpacked: 0, reused: 1 });
  });

  it("a relative oci-archive path is in the working folder", async () => {
    const image = makeImage();
    const cache = new ImageCache(join(folder(), "images"));
    const unpacked = await cache.image(
      { transport: "oci-archive", path: "image.tar" },
      join(image.archive, ".."),
    );
    expect(unpacked.digest).toBe(image.manifest);
  });

  it.each([
    [
      "a damaged layer",
      (layer: string) => writeFileSync(layer, gzipSync(Buffer.alloc(1024))),
      /its layer blob sha256:\w+ does not match its digest/,
    ],
    ["a missing layer", (layer: string) => rmSync(layer), /its layer blob sha256:\w+ is missing/],
  ])("%s fails naming the image's digest and the blob's", async (_, spoil, problem) => {
    const image = makeImage();
    spoil(join(image.layout, "blobs", "sha256", image.layer.slice(7)));
    const cache = new ImageCache(join(folder(), "images"));
    const failure = cache.image({ transport: "oci", path: image.layout }, "/nowhere");
    await expect(failure).rejects.toThrow(`image ${image.manifest}: `);
    await expect(failure).rejects.toThrow(problem);
    expect(cache.counters.unpacked).toBe(0);
  });
});

describe("image layout", () => {
  const digest = (n: string) => `sha256:${n.repeat(64)}`;
  const index = (manifests: unknown[]) => JSON.stringify({ schemaVersion: 2, manifests });

  it.each([
    ["its only image", index([{ digest: digest("a") }]), undefined, digest("a")],
    [
      "the tagged one",
      index([
        { digest: digest("a"), annotations: { "org.opencontainers.image.ref.name": "v1" } },
        { digest: digest("b"), annotations: { "org.opencontainers.image.ref.name": "v2" } },
      ]),
      "v2",
      digest("b"),
    ],
  ])("index.json: %s", (_, text, tag, expected) => {
    expect(manifestDigest(text, tag)).toBe(expected);
  });

  it.each([
    [
      "two images, no tag",
      index([{ digest: digest("a") }, { digest: digest("b") }]),
      undefined,
      /holds 2 images: name one/,
    ],
    ["a tag not there", index([{ digest: digest("a") }]), "v9", /no image tagged v9/],
    [
      "a nested index",
      index([{ mediaType: "application/vnd.oci.image.index.v1+json", digest: digest("a") }]),
      undefined,
      /multi-platform index: not supported yet/,
    ],
    ["no digest", index([{ digest: "md5:x" }]), undefined, /has no sha256 digest/],
    ["not JSON", "{", undefined, /index.json is not JSON/],
  ])("index.json: %s is refused", (_, text, tag, problem) => {
    expect(() => manifestDigest(text, tag)).toThrow(problem);
  });

  it("a manifest's layers in order, gzip or not; zstd refused", () => {
    const manifest = (types: string[]) =>
      JSON.stringify({
        config: { digest: digest("c") },
        layers: types.map((mediaType, i) => ({ mediaType, digest: digest(String(i)) })),
      });
    expect(
      parseManifest(
        manifest(["application/vnd.oci.image.layer.v1.tar+gzip", "application/vnd.oci.image.layer.v1.tar"]),
      ),
    ).toStrictEqual({
      config: digest("c"),
      layers: [
        { digest: digest("0"), compression: "gzip" },
        { digest: digest("1"), compression: "none" },
      ],
    });
    expect(() => parseManifest(manifest(["application/vnd.oci.image.layer.v1.tar+zstd"]))).toThrow(
      /zstd-compressed: not supported yet/,
    );
  });

  it("the config's environment", () => {
    expect(imageEnvironment(JSON.stringify({ config: { Env: ["A=1", "B=x=y", "bad"] } }))).toStrictEqual({
      A: "1",
      B: "x=y",
    });
    expect(imageEnvironment("{}")).toStrictEqual({});
  });
});

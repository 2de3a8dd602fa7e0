// A small OCI image made in a test, without a registry: a busybox-static root folder (sh, cat, ...
// as links to the one binary) with an /etc/os-release of its own, packed as an OCI image layout
// (a gzip layer, its config, a manifest, index.json, every blob named by its sha256) and as an
// oci-archive tar of that layout. Needs Debian's busybox-static (/usr/bin/busybox, static) and tar.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

export const BUSYBOX = "/usr/bin/busybox";

/** What the image's /etc/os-release says: no host has it. */
export const IMAGE_OS_RELEASE = 'ID=steward-test\nPRETTY_NAME="Steward test image"\n';

const APPLETS = [
  "sh",
  "cat",
  "echo",
  "ls",
  "env",
  "sleep",
  "id",
  "head",
  "tr",
  "test",
  "true",
  "mkdir",
  "rm",
  "grep",
  "wc",
];

/** Why the test image cannot be made here, or null. */
export function testImageUnavailable(): string | null {
  if (!existsSync(BUSYBOX)) return `${BUSYBOX} is missing (Debian's busybox-static)`;
  // A dynamic busybox names its loader; the image has no libraries for it.
  if (readFileSync(BUSYBOX).includes("/ld-linux"))
    return `${BUSYBOX} is not statically linked (install busybox-static)`;
  return null;
}

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Writes `bytes` as a blob of the layout and answers its descriptor. */
function blob(
  layout: string,
  mediaType: string,
  bytes: Buffer,
): { mediaType: string; digest: string; size: number } {
  const hex = sha256(bytes);
  writeFileSync(join(layout, "blobs", "sha256", hex), bytes);
  return { mediaType, digest: `sha256:${hex}`, size: bytes.length };
}

export interface TestImage {
  /** The OCI layout folder (its one image tagged `tag`). */
  layout: string;
  tag: string;
  /** The same layout packed as a tar: an oci-archive. */
  archive: string;
  /** The manifest's digest. */
  digest: string;
}

/** Makes the image in `folder` (layout/, rootfs/, image.tar). */
export function buildTestImage(folder: string, tag = "v1"): TestImage {
  const rootfs = join(folder, "rootfs");
  for (const dir of ["bin", "etc", "tmp", "proc", "dev", "sys"])
    mkdirSync(join(rootfs, dir), { recursive: true });
  copyFileSync(BUSYBOX, join(rootfs, "bin", "busybox"));
  for (const applet of APPLETS) symlinkSync("busybox", join(rootfs, "bin", applet));
  writeFileSync(join(rootfs, "etc", "os-release"), IMAGE_OS_RELEASE);
  writeFileSync(join(rootfs, "etc", "passwd"), "root:x:0:0:root:/:/bin/sh\n");
  const layout = join(folder, "layout");
  mkdirSync(join(layout, "blobs", "sha256"), { recursive: true });
  const layerFile = join(folder, "layer.tar.gz");
  execFileSync("tar", ["-C", rootfs, "--numeric-owner", "--owner=0", "--group=0", "-czf", layerFile, "."]);
  const layerBytes = readFileSync(layerFile);
  const layer = blob(layout, "application/vnd.oci.image.layer.v1.tar+gzip", layerBytes);
  const config = blob(
    layout,
    "application/vnd.oci.image.config.v1+json",
    Buffer.from(
      JSON.stringify({
        architecture: "amd64",
        os: "linux",
        config: { Env: ["PATH=/bin", "IMAGE_SAYS=hello"] },
        rootfs: { type: "layers", diff_ids: [`sha256:${sha256(gunzipSync(layerBytes))}`] },
      }),
    ),
  );
  const manifest = blob(
    layout,
    "application/vnd.oci.image.manifest.v1+json",
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config,
        layers: [layer],
      }),
    ),
  );
  writeFileSync(join(layout, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(
    join(layout, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ ...manifest, annotations: { "org.opencontainers.image.ref.name": tag } }],
    }),
  );
  const archive = join(folder, "image.tar");
  execFileSync("tar", ["-C", layout, "--numeric-owner", "-cf", archive, "."]);
  return { layout, tag, archive, digest: manifest.digest };
}

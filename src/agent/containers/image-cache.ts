// The host's unpacked images (docs/containers.md): each image's root folder made once from its
// layers and kept under the agent's work folder by its manifest's digest (images/<hex>/rootfs,
// with image.json beside it), shared by every attempt that runs it, and kept across restarts. An
// image is unpacked in a folder of its own and renamed into place whole, so an attempt never sees
// a half-made one; two attempts asking for the same image at once wait for one unpack. Every blob
// read is checked against its digest: a damaged image fails naming the digest.

import { createHash, type Hash, randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  createReadStream,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import type { ImageName } from "../../common/model/image-name.ts";
import { digestHex, imageEnvironment, manifestDigest, parseManifest } from "./image-layout.ts";
import { applyLayer } from "./layer-apply.ts";

/** An image ready to run: its manifest's digest, its root folder (read-only: shared) and its config's environment. */
export interface UnpackedImage {
  digest: string;
  rootfs: string;
  env: Record<string, string>;
}

/** What the cache did since the agent started: images unpacked, and images found unpacked already. */
export interface ImageCacheCounters {
  unpacked: number;
  reused: number;
}

const RECORD = "image.json";

export class ImageCache {
  readonly dir: string;
  readonly counters: ImageCacheCounters = { unpacked: 0, reused: 0 };
  /** Unpacks under way, by digest: a second asker waits for the first. */
  readonly #unpacking = new Map<string, Promise<UnpackedImage>>();
  /** oci-archive files already read, by path and what stat says of them: their manifest's digest. */
  readonly #archives = new Map<string, string>();

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // What an earlier run of the agent left half made goes.
    for (const name of readdirSync(dir))
      if (name.startsWith(".")) rmSync(join(dir, name), { recursive: true, force: true });
  }

  /**
   * The image `name` unpacked; a relative path is in `workingFolder` (an input). Throws with what
   * is wrong, naming the image and, once known, its digest.
   */
  async image(name: ImageName, workingFolder: string): Promise<UnpackedImage> {
    const path = name.path.startsWith("/") ? name.path : join(workingFolder, name.path);
    if (name.transport === "oci") {
      const digest = manifestDigest(readBlobText(join(path, "index.json"), "index.json"), name.tag);
      return this.#once(digest, () => this.#unpack(path, digest));
    }
    const stat = statSync(path);
    const key = `${path}\0${stat.dev}\0${stat.ino}\0${stat.size}\0${stat.mtimeMs}`;
    const known = this.#archives.get(key);
    if (known !== undefined && this.#ready(known)) return this.#once(known, async () => this.#read(known));
    // The archive is opened into a layout of its own (its blobs are checked as the layers are read).
    const staging = this.#staging("archive");
    try {
      const layout = join(staging, "layout");
      mkdirSync(layout);
      await applyLayer(layout, createReadStream(path));
      const digest = manifestDigest(readBlobText(join(layout, "index.json"), "index.json"));
      this.#archives.set(key, digest);
      return await this.#once(digest, () => this.#unpack(layout, digest));
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }

  #ready(digest: string): boolean {
    return existsSync(join(this.dir, digestHex(digest), RECORD));
  }

  #read(digest: string): UnpackedImage {
    const folder = join(this.dir, digestHex(digest));
    const record = JSON.parse(readFileSync(join(folder, RECORD), "utf8")) as { env: Record<string, string> };
    return { digest, rootfs: join(folder, "rootfs"), env: record.env };
  }

  #once(digest: string, unpack: () => Promise<UnpackedImage>): Promise<UnpackedImage> {
    if (this.#ready(digest)) {
      this.counters.reused++;
      return Promise.resolve(this.#read(digest));
    }
    let pending = this.#unpacking.get(digest);
    if (!pending) {
      pending = unpack().finally(() => this.#unpacking.delete(digest));
      this.#unpacking.set(digest, pending);
    }
    return pending;
  }

  #staging(kind: string): string {
    const folder = join(this.dir, `.${kind}-${process.pid}-${randomBytes(6).toString("hex")}`);
    mkdirSync(folder, { mode: 0o700 });
    return folder;
  }

  /** Unpacks the image of `layout` (an OCI layout folder) whose manifest is `digest`. */
  async #unpack(layout: string, digest: string): Promise<UnpackedImage> {
    const staging = this.#staging("unpack");
    try {
      const blob = (of: string) => join(layout, "blobs", "sha256", digestHex(of));
      const manifestText = readChecked(blob(digest), digest, "manifest");
      const manifest = parseManifest(manifestText);
      const env = imageEnvironment(readChecked(blob(manifest.config), manifest.config, "config"));
      const rootfs = join(staging, "rootfs");
      mkdirSync(rootfs);
      // The image's root is every account's to pass, whatever the agent's umask (077).
      chmodSync(rootfs, 0o755);
      for (const layer of manifest.layers) await applyChecked(rootfs, blob(layer.digest), layer.digest);
      writeFileSync(join(staging, RECORD), JSON.stringify({ digest, env }));
      const folder = join(this.dir, digestHex(digest));
      try {
        renameSync(staging, folder);
      } catch (error) {
        // Another agent process made it meanwhile: its copy is as good.
        if (!this.#ready(digest)) throw error;
      }
      this.counters.unpacked++;
      return this.#read(digest);
    } catch (error) {
      throw new Error(`image ${digest}: ${(error as Error).message}`);
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
}

function readBlobText(path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(
      `the image has no ${what}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}

/** A small blob's text, checked against its digest. */
function readChecked(path: string, digest: string, what: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    throw new Error(`its ${what} blob ${digest} is missing`);
  }
  if (`sha256:${createHash("sha256").update(bytes).digest("hex")}` !== digest)
    throw new Error(`its ${what} blob ${digest} does not match its digest (a damaged image)`);
  return bytes.toString("utf8");
}

async function* hashed(path: string, hash: Hash): AsyncGenerator<Buffer> {
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    yield chunk as Buffer;
  }
}

function isGzip(path: string): boolean {
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(2);
    return readSync(fd, head, 0, 2, 0) === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

/** Applies the layer blob at `path` over `rootfs`, its bytes checked against `digest` as they are read. */
async function applyChecked(rootfs: string, path: string, digest: string): Promise<void> {
  if (!existsSync(path)) throw new Error(`its layer blob ${digest} is missing`);
  const hash = createHash("sha256");
  const source = Readable.from(hashed(path, hash));
  let stream: AsyncIterable<Uint8Array> = source;
  if (isGzip(path)) {
    const gunzip = createGunzip();
    source.on("error", (error) => gunzip.destroy(error));
    stream = source.pipe(gunzip);
  }
  try {
    await applyLayer(rootfs, stream);
  } catch (error) {
    // Read only in part: whether its bytes match is not known; what failed is said.
    throw new Error(`its layer ${digest}: ${(error as Error).message}`);
  }
  if (`sha256:${hash.digest("hex")}` !== digest)
    throw new Error(`its layer blob ${digest} does not match its digest (a damaged image)`);
}

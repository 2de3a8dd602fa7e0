// The checkpoint folder of an attempt, kept on the server side: changed files are uploaded as
// objects named by their SHA-256 (content-addressed, so an unchanged file is never sent twice),
// then a manifest naming them all is committed. A restarted attempt, on any host, gets the folder
// back from the last committed manifest, checked first (no path that could leave the folder) and
// written without following links. Files whose names end in .tmp or start with a dot are
// the job's half-written temporaries (it writes, then renames) and are left out. A job run as
// another account owns this folder: only files of that account's are taken (job-written-file.ts).

import { createHash } from "node:crypto";
import { createReadStream, openAsBlob } from "node:fs";
import { copyFile, link, lstat, mkdir, readdir, rm, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { Readable } from "node:stream";
import { checkpointPathProblem } from "../../common/model/checkpoint-paths.ts";
import {
  agentFileRoutes,
  type CheckpointManifest,
  readCheckpointManifest,
} from "../../common/protocol/messages.ts";
import type { HttpClient } from "../../common/transport/http-client.ts";
import { openJobFile, readJobFile } from "./job-written-file.ts";
import { NoFollowError, NoFollowFolder } from "./no-follow-folder.ts";

export interface CheckpointTarget {
  /** The agent's client of the server it is connected to, with its join token. */
  http: HttpClient;
  jobId: string;
  taskIndex: number;
  attempt: number;
  dir: string;
  /** A multi-node job's rank: its checkpoints are committed under the generation the job declares. */
  rank?: number;
}

/**
 * In a multi-node job, each rank writes the generation of the state it has just saved (an integer
 * that grows, the same on every rank for one coordinated checkpoint: its iteration, say) into this
 * file of its checkpoint folder; the agent commits the folder under that generation when it changes.
 */
export const GENERATION_FILE = ".generation";

interface Known {
  size: number;
  mtimeMs: number;
  ino: number;
  sha256: string;
  /**
   * A hard link to the file as it was hashed, until its object is uploaded: the job may replace the
   * file meanwhile (write, then rename), and what is sent is what was hashed.
   */
  snapshot?: string;
}

function isCheckpointFile(name: string): boolean {
  return !name.startsWith(".") && !name.endsWith(".tmp");
}

export class CheckpointSync {
  private readonly target: CheckpointTarget;
  /** Hashes of files as last seen, so that unchanged files are not read again. */
  private readonly known = new Map<string, Known>();
  /** Objects the server holds for this task. */
  private readonly uploaded = new Set<string>();
  private lastCommitted: string | null = null;
  /** A gang rank's last committed generation. */
  private lastGeneration: number | null = null;
  /** Snapshots made so far (their names). */
  private snapshots = 0;
  private running: Promise<number | null> | null = null;
  /** The uid of the job's account when it is not the agent's: the files taken must be its own. */
  owner: number | null = null;

  constructor(target: CheckpointTarget) {
    this.target = target;
  }

  /**
   * Fetches the task's last checkpoint into the folder (new and empty: the attempt's). Returns its
   * file count, or null when there is none. The manifest is checked first, whatever server sent it:
   * one path that could leave the folder, or named twice, refuses it all before a byte is written
   * (checkpoint-paths.ts). Files are written without following links (no-follow-folder.ts).
   */
  async restore(): Promise<number | null> {
    const { jobId, taskIndex, rank } = this.target;
    const response = await this.target.http.request({
      path: agentFileRoutes.checkpoint(jobId, taskIndex, rank),
    });
    if (response.status === 404) return null;
    if (!response.ok) throw new Error(`GET checkpoint: HTTP ${response.status}${await errorOf(response)}`);
    const manifest = readCheckpointManifest(await response.json());
    const folder = await NoFollowFolder.open(this.target.dir);
    try {
      for (const file of manifest.files) await this.restoreFile(folder, file);
    } catch (error) {
      if (error instanceof NoFollowError) throw new Error(`restoring the checkpoint: ${error.message}`);
      throw error;
    } finally {
      await folder.close();
    }
    this.lastCommitted = manifestKey(manifest);
    if (manifest.gang) this.lastGeneration = manifest.gang.generation;
    return manifest.files.length;
  }

  private async restoreFile(
    folder: NoFollowFolder,
    file: CheckpointManifest["files"][number],
  ): Promise<void> {
    const { jobId, taskIndex } = this.target;
    const handle = await folder.createFile(file.path);
    try {
      const object = await this.target.http.request({
        path: agentFileRoutes.checkpointObject(jobId, taskIndex, file.sha256),
      });
      if (!object.ok || !object.body)
        throw new Error(`GET checkpoint object ${file.path}: HTTP ${object.status}`);
      // Written through the handle made without following links; it stays open for the size check.
      await handle.writeFile(Readable.fromWeb(object.body));
      const info = await handle.stat();
      if (info.size !== file.bytes)
        throw new Error(
          `checkpoint object ${file.path}: ${info.size} bytes where the manifest says ${file.bytes}`,
        );
      this.known.set(file.path, {
        size: info.size,
        mtimeMs: info.mtimeMs,
        ino: info.ino,
        sha256: file.sha256,
      });
      this.uploaded.add(file.sha256);
    } finally {
      await handle.close();
    }
  }

  /**
   * The generation a gang's rank declared in its folder (null when it has declared none), with
   * the identity of the file that says it (inode and change time): the SDK replaces the file for
   * each declaration, and removes it before it saves a new state.
   */
  private async declaration(): Promise<{ generation: number; identity: string } | null> {
    const path = join(this.target.dir, GENERATION_FILE);
    const text = await readJobFile(path, this.owner, 64);
    const generation = text === null ? Number.NaN : Number(text.trim());
    if (!Number.isSafeInteger(generation) || generation < 1) return null;
    const info = await stat(path).catch(() => null);
    return info ? { generation, identity: `${info.ino}:${info.ctimeMs}` } : null;
  }

  /**
   * Uploads what changed and commits a new generation; returns it, or null when nothing changed.
   * Calls never overlap: a call made while one runs waits for it and then runs once more.
   */
  async sync(): Promise<number | null> {
    while (this.running) await this.running.catch(() => null);
    this.running = this.syncOnce();
    try {
      return await this.running;
    } finally {
      this.running = null;
    }
  }

  private async syncOnce(): Promise<number | null> {
    const { rank } = this.target;
    // A gang's rank commits only the states the job declared, each once.
    const declared = rank === undefined ? null : await this.declaration();
    const generation = declared?.generation ?? null;
    if (rank !== undefined && (generation === null || generation === this.lastGeneration)) return null;
    const manifest = await this.scan();
    if (declared) {
      // The files are this generation's only if the declaration stood all through the scan: a
      // job that went on to save the next state meanwhile took it back first (the SDK does), or
      // declared the next one. Then this round commits nothing, and a later one the newer state.
      const after = await this.declaration();
      if (after?.generation !== declared.generation || after.identity !== declared.identity) return null;
    }
    const key = manifestKey(manifest);
    if (
      rank === undefined &&
      (key === this.lastCommitted || (this.lastCommitted === null && manifest.files.length === 0))
    )
      return null;
    if (rank !== undefined && generation !== null) manifest.gang = { rank, generation };
    const { jobId, taskIndex, attempt } = this.target;
    for (const file of manifest.files) {
      if (this.uploaded.has(file.sha256)) continue;
      // Named by its hash, an object is the same whoever sends it and however often.
      const snapshot = this.known.get(file.path)?.snapshot;
      const source = snapshot ? null : await openJobFile(join(this.target.dir, file.path), this.owner);
      const path = snapshot ?? source?.path;
      if (!path) throw new Error(`checkpoint file ${file.path} is gone`);
      try {
        const response = await this.target.http.request({
          method: "PUT",
          path: agentFileRoutes.uploadObject(jobId, taskIndex, attempt, file.sha256),
          headers: { "content-type": "application/octet-stream" },
          body: () => openAsBlob(path),
          idempotent: true,
        });
        if (!response.ok)
          throw new Error(
            `PUT checkpoint object ${file.path}: HTTP ${response.status} ${await response.text()}`,
          );
      } finally {
        await source?.close();
      }
      this.uploaded.add(file.sha256);
    }
    // Committing the same manifest twice makes one more generation of the same files: harmless.
    const response = await this.target.http.request({
      method: "POST",
      path: agentFileRoutes.commitCheckpoint(jobId, taskIndex, attempt),
      json: manifest,
      idempotent: true,
    });
    if (!response.ok) {
      // The server may have dropped objects we thought it had: start from a clean slate next time.
      this.uploaded.clear();
      throw new Error(`commit checkpoint: HTTP ${response.status} ${await response.text()}`);
    }
    const { generation: committed } = (await response.json()) as { generation: number };
    this.lastCommitted = key;
    if (manifest.gang) this.lastGeneration = manifest.gang.generation;
    // The server keeps only the objects of the last generation.
    this.uploaded.clear();
    for (const file of manifest.files) this.uploaded.add(file.sha256);
    await this.dropSnapshots();
    return committed;
  }

  /** The snapshots are not needed once their objects are on the server. */
  private async dropSnapshots(): Promise<void> {
    for (const known of this.known.values()) {
      if (!known.snapshot) continue;
      await rm(known.snapshot, { force: true });
      known.snapshot = undefined;
    }
  }

  private get snapshotDir(): string {
    return `${this.target.dir}.snapshots`;
  }

  /**
   * A hard link to the file as it is now (a copy where links are refused), or null when it is gone
   * or is not the job's own: the folder beside this one is the agent's, where the job cannot reach.
   */
  private async snapshot(path: string): Promise<string | null> {
    await mkdir(this.snapshotDir, { recursive: true, mode: 0o700 });
    const target = join(this.snapshotDir, `${++this.snapshots}`);
    try {
      await link(path, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      const source = await openJobFile(path, this.owner);
      if (!source) return null;
      const copied = await copyFile(source.path, target).then(
        () => true,
        () => false,
      );
      await source.close();
      return copied ? target : null;
    }
    // The link was made by name: through a folder the job swapped for a link, it may be someone else's file.
    const taken = await lstat(target).catch(() => null);
    if (taken?.isFile() && (this.owner === null || taken.uid === this.owner)) return target;
    await rm(target, { force: true });
    return null;
  }

  private async scan(): Promise<CheckpointManifest> {
    const files: CheckpointManifest["files"] = [];
    const seen = new Set<string>();
    for (const path of await listFiles(this.target.dir)) {
      const info = await lstat(path).catch(() => null);
      if (!info?.isFile()) continue;
      const name = relative(this.target.dir, path).split(sep).join("/");
      // A name the server would refuse (it could be read as leaving the folder: `..\x`) is left
      // out, as a temporary is, rather than have every commit of the folder refused.
      if (checkpointPathProblem(name)) continue;
      seen.add(name);
      let known = this.known.get(name);
      if (!known || known.size !== info.size || known.mtimeMs !== info.mtimeMs || known.ino !== info.ino) {
        // Hashed and later sent from one snapshot: a file replaced meanwhile does not change it.
        const snapshot = await this.snapshot(path);
        const taken = snapshot ? await stat(snapshot).catch(() => null) : null;
        if (!snapshot || !taken) {
          seen.delete(name);
          continue;
        }
        if (known?.snapshot) await rm(known.snapshot, { force: true });
        known = {
          size: taken.size,
          mtimeMs: taken.mtimeMs,
          ino: taken.ino,
          sha256: await sha256Of(snapshot),
          snapshot,
        };
        this.known.set(name, known);
      }
      files.push({ path: name, sha256: known.sha256, bytes: known.size });
    }
    for (const [name, known] of this.known) {
      if (seen.has(name)) continue;
      if (known.snapshot) await rm(known.snapshot, { force: true });
      this.known.delete(name);
    }
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { files };
  }
}

/** The message of an error answer, after a colon; empty when there is none. */
async function errorOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === "string") return `: ${message}`;
  } catch {}
  return text ? `: ${text.slice(0, 500)}` : "";
}

function manifestKey(manifest: CheckpointManifest): string {
  return manifest.files.map((file) => `${file.path}\0${file.sha256}`).join("\n");
}

async function listFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!isCheckpointFile(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await listFiles(path)));
    else if (entry.isFile()) found.push(path);
  }
  return found;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

// One attempt on this host. Its folder is its durable record: start.json (what the server asked),
// job.sh (the command with its environment; for a job run as another account, the environment is
// in `environment` beside it), pid and exit (written by the supervisor; the agent adds the job's
// start time to pid), stop (a stop request), stdout and stderr, run/ (the working folder, unless
// the job runs in place: its `workdir`), checkpoint/, the progress and requirements files the job
// writes (in notes/ for a job run as another account, which owns that folder) and, for a rank,
// nodes. A restarted agent re-adopts attempts from these folders; once the server has the attempt's
// end its folder goes, or is kept for a later attempt (spare-folders.ts). A job run as another
// account owns only its parts of the folder (attempt-folder.ts), read through job-written-file.ts.

import { closeSync, constants, lstatSync, mkdirSync, openSync, writeSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import type { StartMessage } from "../../common/protocol/messages.ts";
import { REQUIREMENTS_MAX_CHARS } from "../../common/protocol/messages.ts";
import type { HttpClient } from "../../common/transport/http-client.ts";
import type { JobUser } from "../accounts/run-as.ts";
import type { ContentCache } from "../cache/content-cache.ts";
import type { AttemptCgroup } from "../cgroups/attempt-cgroup.ts";
import type { Enforcement } from "../cgroups/enforcement.ts";
import { type ContainerHost, killContainer, removeContainer } from "../containers/container-run.ts";
import { CheckpointSync } from "../files/checkpoint.ts";
import { readJobFile } from "../files/job-written-file.ts";
import { writeNewFile } from "../files/new-file.ts";
import { stageInputs, stageOutputs } from "../files/staging.ts";
import type { LaunchedJob, LauncherKind, LaunchRequest } from "../launcher/launcher.ts";
import { readJson, readWhole, writeAtomic } from "./attempt-files.ts";
import { handOver, jobOwner, removeAttemptFolder } from "./attempt-folder.ts";
import { attemptDirName, attemptKeyOf } from "./attempt-identity.ts";
import {
  type AttemptResult,
  outcomeOfOutputs,
  outcomeWithoutOutputs,
  outputsNotStaged,
  type StopOutcome,
  type StopRequest,
} from "./attempt-outcome.ts";
import { containerStart } from "./container-launch.ts";
import { freePort, nodesFile } from "./gang-rank.ts";
import { bootTimeMs, isSameJob, parsePidFile, readProcStat, signalGroup } from "./job-process.ts";
import { JobStart } from "./job-run-time.ts";
import { type JobPaths, jobEnvironmentFile, jobExec, jobScript } from "./job-script.ts";
import { measureAndEnd } from "./measure-usage.ts";
import { TIMES_FILE } from "./shell-times.ts";
import { BLANK_RECORD, type SpareFolders, writeInPlace } from "./spare-folders.ts";

/** How often a gang's rank looks for a newly declared checkpoint generation. */
export const GANG_CHECKPOINT_POLL_MS = 250;

const PID_APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW;

/** A progress file is a number: longer ones are read no further. */
const PROGRESS_MAX_BYTES = 64;

export interface AttemptContext {
  /** The server's files (inputs, outputs, checkpoints), through the server the agent is connected to. */
  http: HttpClient;
  /** The host's content cache, which inputs come through. */
  cache: ContentCache;
  hostName: string;
  workDir: string;
  /** Kept attempt folders for jobs of the agent's own account. */
  spares: SpareFolders;
  /** The umask jobs start with (the agent's own when absent). */
  jobUmask?: number;
  /** Where attempts' limits are enforced (cgroups); null or absent: they are not. */
  enforcement?: Enforcement | null;
  /** The GPU ids the agent offers (--gpus): with enforcement on v1, an attempt may open only its own. */
  gpus?: readonly string[];
  /** Which launcher starts the jobs (launcher.ts): launcher.c and launcher.pl need no job.sh for the agent's own account's jobs. */
  launcher: LauncherKind;
  /** The container runtime and image cache (containers/container-run.ts); null or absent: none here. */
  containers?: ContainerHost | null;
}

/** An attempt's start.json: the server's start message without its secrets, and the name of the cgroup it was given. */
interface StartRecord extends StartMessage {
  cgroup?: string;
}

export class Attempt {
  readonly spec: StartMessage;
  readonly dir: string;
  readonly runDir: string;
  /** Where the job writes its progress and requirements: notes/ when another account runs it (set by prepare or adopt). */
  #notes: string | null = null;
  readonly stdoutPath: string;
  readonly stderrPath: string;
  pid: number | null = null;
  /** The uid the job runs as when it is not the agent's: only its own files are read from the job's parts. */
  private owner: number | null = null;
  /** The job's start time in /proc terms, as the agent recorded it beside the pid (job-process.ts). */
  private pidStartTime: string | null = null;
  /** When the supervisor wrote the pid file: stands in for a start time the agent could not record. */
  private pidWrittenMs: number | null = null;
  /** When the job started, for its wall time and time limit (job-run-time.ts): launched, or adopted. */
  readonly start = new JobStart();
  exitCode: number | null = null;
  /** Taken over from an earlier run of the agent, rather than started by this one. */
  adopted = false;
  /** Set once the end was reported (or is being prepared): the attempt no longer holds slots. */
  ended = false;
  /** What the launcher is told to start it, once prepared. */
  launchRequest: LaunchRequest | null = null;
  /** Bytes of stdout and stderr already sent to the server. */
  readonly sent = { stdout: 0, stderr: 0 };
  readonly checkpoint: CheckpointSync;
  private stopRequest: StopRequest | null = null;
  private killTimer: NodeJS.Timeout | null = null;
  private limitTimer: NodeJS.Timeout | null = null;
  private checkpointTimer: NodeJS.Timeout | null = null;
  private readonly context: AttemptContext;
  /**
   * The attempt's cgroup, where limits are enforced: chosen when it is prepared (a kept one, or a
   * new one named after its folder) and named in its start.json, or an adopted attempt's.
   */
  private cgroup: AttemptCgroup | null = null;

  constructor(spec: StartMessage, context: AttemptContext) {
    this.spec = spec;
    this.context = context;
    this.dir = join(
      context.workDir,
      "attempts",
      attemptDirName(spec.jobId, spec.taskIndex, spec.attempt, spec.gang?.rank),
    );
    this.runDir = join(this.dir, "run");
    this.stdoutPath = join(this.dir, "stdout");
    this.stderrPath = join(this.dir, "stderr");
    this.checkpoint = new CheckpointSync({
      http: context.http,
      jobId: spec.jobId,
      taskIndex: spec.taskIndex,
      attempt: spec.attempt,
      dir: join(this.dir, "checkpoint"),
      ...(spec.gang ? { rank: spec.gang.rank } : {}),
    });
  }

  /** The name of its cgroup, or null without one. */
  get cgroupName(): string | null {
    return this.cgroup?.name ?? null;
  }

  get key(): string {
    return attemptKeyOf({ ...this.spec, rank: this.spec.gang?.rank });
  }

  get checkpointDir(): string {
    return join(this.dir, "checkpoint");
  }

  /** The folder of the job's progress and requirements files: the attempt's own, for a job of the agent's account. */
  get notesDir(): string {
    return this.#notes ?? this.dir;
  }

  /**
   * Creates the folder, stages the inputs in and writes job.sh. Throws when staging fails. With
   * another account, the job's parts of the folder become that account's and job.sh drops to it.
   */
  async prepare(user: JobUser | null = null): Promise<void> {
    // What a start that never got this far left (no start.json: no agent took it up) goes first.
    if (lstatSync(this.dir, { throwIfNoEntry: false })) await removeAttemptFolder(this.dir);
    // A few small files on the host's own disk: made with synchronous calls, which cost a fraction
    // of a dozen round trips through the thread pool (the agent's CPU per short task went mostly
    // there), and block the event loop for well under a millisecond.
    // Nobody else sees it while it is prepared; the job's account sees its parts once handed over.
    const gang = this.spec.gang;
    // Rank 0's agent picks the coordinator's port: free now, for the job to listen on.
    if (gang && gang.rank === 0 && gang.coordinator === null)
      gang.coordinator = `${gang.nodes[0].address}:${await freePort()}`;
    this.cgroup = this.context.enforcement?.newAttempt(basename(this.dir)) ?? null;
    const { secrets: _inMemoryOnlyNeverInTheFolder, ...kept } = this.spec;
    const record: StartRecord = this.cgroup ? { ...kept, cgroup: this.cgroup.name } : kept;
    const startJson = JSON.stringify(record);
    // A job of the agent's own account gets a kept folder when there is one (spare-folders.ts),
    // its start.json already written; the job's parts are new either way.
    const reused = user === null && this.context.spares.reuseAs(this.dir, startJson);
    if (!reused) mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // Another account's job writes its notes in a folder of its own; one of the agent's account in
    // the attempt's (one folder fewer to make and remove for each short task).
    // A container's job reaches its notes folder through a mount of its own (container-launch.ts).
    if (user || this.spec.container) this.#notes = join(this.dir, "notes");
    // A kept folder may have them already, empty (spare-folders.ts).
    for (const dir of [this.runDir, this.checkpointDir, this.#notes])
      if (dir && !(reused && lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()))
        mkdirSync(dir, { mode: 0o700 });
    // A job run as another account: its logs are made here, the agent's and private, for the
    // supervisor to append to. A job of the agent's own account: the supervisor's append makes
    // them, inside this private folder (two files fewer for each short task).
    // New files, never through a link at their name (new-file.ts).
    if (user) for (const path of [this.stdoutPath, this.stderrPath]) writeNewFile(path, "");
    if (gang) writeNewFile(join(this.dir, "nodes"), nodesFile(gang.nodes));
    if (!reused) writeNewFile(join(this.dir, "start.json"), startJson);
    await stageInputs(this.context, this.spec, this.runDir);
    if (this.spec.restarted) await this.checkpoint.restore();
    const paths: JobPaths = {
      runDir: this.runDir,
      ...(this.spec.workdir !== undefined ? { workdir: this.spec.workdir } : {}),
      checkpointDir: this.checkpointDir,
      progressFile: join(this.notesDir, "progress"),
      requirementsFile: join(this.notesDir, "requirements"),
      hostName: this.context.hostName,
      nodesFile: join(this.dir, "nodes"),
      user,
      umask: this.context.jobUmask,
      ...(user ? { environmentFile: join(this.dir, "environment") } : {}),
    };
    // Root's alone, like job.sh: the job's shell reads it through a descriptor root opens.
    if (paths.environmentFile) writeNewFile(paths.environmentFile, jobEnvironmentFile(this.spec, paths));
    // Its cgroup, with its limits: the job joins it first thing, so that all the job makes is in it.
    if (this.cgroup) {
      this.cgroup.create({
        memoryMb: this.spec.memoryMb,
        cpus: this.spec.cpus,
        maxProcesses: this.spec.maxProcesses,
        deniedGpus: (this.context.gpus ?? []).filter((id) => !this.spec.gpus?.includes(id)),
      });
      paths.cgroupJoin = this.cgroup.joinScript();
    } else {
      // No cgroup to measure: the supervisor writes the job's CPU time here as the shell's `times`
      // prints it (shell-times.ts), over a blank line (a kept folder's file is rewritten in place,
      // spare-folders.ts).
      writeInPlace(join(this.dir, TIMES_FILE), BLANK_RECORD);
    }
    // A container's job: the launcher runs its runtime as root, which runs the job as its account.
    const launched = await containerStart(this.context.containers, this.spec, this.dir, paths, user);
    const runAs = this.spec.container ? null : user;
    const launchPaths = runAs === user ? paths : { ...paths, user: null };
    // launcher.c and launcher.pl start a job of the agent's own account from what they are told; a
    // job of another account, or any job under the shell launcher, runs job.sh.
    const exec =
      this.context.launcher !== "sh" && !runAs
        ? jobExec(launched, launchPaths, this.cgroup?.procsFiles() ?? [])
        : null;
    if (exec === null) writeInPlace(join(this.dir, "job.sh"), jobScript(launched, launchPaths));
    this.launchRequest = { dir: this.dir, times: this.cgroup === null, exec };
    if (user) {
      await handOver(this.dir, user.account);
      this.ownedBy(user.account.uid);
    }
  }

  private ownedBy(uid: number | null): void {
    this.owner = uid;
    this.checkpoint.owner = uid;
  }

  /** Re-adopts an attempt from its folder after an agent restart; null when the folder is unusable. */
  static async adopt(dir: string, context: AttemptContext): Promise<Attempt | null> {
    let record: StartRecord;
    try {
      record = JSON.parse(await readFile(join(dir, "start.json"), "utf8")) as StartRecord;
    } catch {
      return null;
    }
    const { cgroup, ...spec } = record;
    const attempt = new Attempt(spec, context);
    // An earlier version's attempt has no cgroup named: its cgroup had the folder's name.
    attempt.cgroup = context.enforcement?.attempt(cgroup ?? basename(dir)) ?? null;
    attempt.adopted = true;
    attempt.ownedBy((await jobOwner(dir))?.uid ?? null);
    if (lstatSync(join(dir, "notes"), { throwIfNoEntry: false })?.isDirectory())
      attempt.#notes = join(dir, "notes");
    attempt.stopRequest = await readJson<StopRequest>(join(dir, "stop"));
    await attempt.readPid();
    const exit = await readWhole(join(dir, "exit"));
    if (exit !== null) attempt.exitCode = Number(exit.trim());
    return attempt;
  }

  /** The fraction the job last wrote in its progress file, or null. */
  async readProgress(): Promise<number | null> {
    const text = await readJobFile(join(this.notesDir, "progress"), this.owner, PROGRESS_MAX_BYTES);
    const fraction = text === null ? Number.NaN : Number.parseFloat(text);
    return Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : null;
  }

  /**
   * What the job last wrote in its requirements file, or null when there is none. Only the start
   * of a long file is read: enough to be longer than the server accepts, whatever the encoding.
   */
  async readRequirements(): Promise<string | null> {
    return readJobFile(join(this.notesDir, "requirements"), this.owner, REQUIREMENTS_MAX_CHARS * 4 + 1);
  }

  /** Reads the pid the supervisor recorded, if it has, and the start time the agent added. */
  async readPid(): Promise<void> {
    const path = join(this.dir, "pid");
    const text = await readWhole(path);
    if (!text) return;
    const { pid, startTicks } = parsePidFile(text);
    this.pid = pid;
    this.pidStartTime = startTicks;
    // The folder may go meanwhile (the attempt ended): the time is then not needed.
    const written = (await stat(path).catch(() => null))?.mtimeMs;
    if (written === undefined) return;
    this.pidWrittenMs = written;
    this.start.adopted(written);
  }

  /** Whether the job still runs: its pid is held by the process that started as the job. */
  async isAlive(): Promise<boolean> {
    if (this.pid === null) return false;
    if (this.pidStartTime === null && this.pidWrittenMs === null) await this.readPid();
    if (this.pid === null) return false;
    return isSameJob(readProcStat(this.pid), {
      recordedStartTicks: this.pidStartTime,
      pidWrittenMs: this.pidWrittenMs ?? Date.now(),
      bootMs: bootTimeMs(),
    });
  }

  async readExitFile(): Promise<number | null> {
    const exit = await readWhole(join(this.dir, "exit"));
    return exit === null ? null : Number(exit.trim());
  }

  /**
   * The launcher is asked to start the job: its wall time counts from here. The compiled launcher
   * tells of a start once the job's exec is done, a moment into the job's own time; counted from
   * that, a `sleep 0.5` could measure 0.499 s.
   */
  markLaunched(): void {
    this.start.launched();
  }

  /**
   * The job started as `job.pid`. `job.exited`: its exit is known already (a short job), so there
   * is no start time to record (it tells the job from a later process after an agent restart, when
   * the exit is not known) and nothing to arm.
   */
  markStarted(job: Omit<LaunchedJob, "dir">, onCheckpointError?: (error: unknown) => void): void {
    this.pid = job.pid;
    // The compiled launcher read the start time and wrote it under the pid itself.
    if (job.startTicks !== undefined) this.pidStartTime = job.startTicks;
    if (job.exited) return;
    if (job.startTicks === undefined) this.noteStartTime(job.pid);
    if (this.stopRequest) this.signalJob("SIGTERM");
    this.armTimeLimit();
    this.armCheckpoints(onCheckpointError);
  }

  /**
   * Adds the job's start time to the pid file (job-process.ts): what tells the job from a process
   * that reuses its pid later. A job gone already needs none: its exit is on its way.
   */
  private noteStartTime(pid: number): void {
    const job = readProcStat(pid);
    if (!job || job.state === "Z") return;
    this.pidStartTime = job.startTicks;
    try {
      // Appended to the supervisor's file, never through a link in its place.
      const fd = openSync(join(this.dir, "pid"), PID_APPEND);
      try {
        writeSync(fd, `${job.startTicks}\n`);
      } finally {
        closeSync(fd);
      }
    } catch {
      // The folder went (the attempt ended meanwhile): nothing to keep it for.
    }
  }

  /** Uploads the checkpoint folder's changes every checkpoint interval while the job runs. */
  armCheckpoints(onError: (error: unknown) => void = () => {}): void {
    if (this.checkpointTimer) return;
    // A gang's rank commits each generation the job declares: it looks often, and sends only then.
    const everyMs = this.spec.gang
      ? Math.min(GANG_CHECKPOINT_POLL_MS, this.spec.checkpointIntervalSeconds * 1000)
      : this.spec.checkpointIntervalSeconds * 1000;
    this.checkpointTimer = setInterval(() => {
      this.checkpoint.sync().catch(onError);
    }, everyMs);
    this.checkpointTimer.unref();
  }

  /** Time limit: measured from the job's start, also across an agent restart. */
  armTimeLimit(): void {
    const limit = this.spec.timeLimitSeconds;
    const ran = this.start.ranMs();
    if (!limit || this.limitTimer || ran === null) return;
    const stop = () =>
      void this.stop("timed_out", `time limit of ${limit} s reached`, this.spec.graceSeconds);
    this.limitTimer = setTimeout(stop, Math.max(0, limit * 1000 - ran));
    this.limitTimer.unref();
  }

  /** Whether the agent asked the job to stop (a migration, preemption, cancel, time limit). */
  get stopping(): boolean {
    return this.stopRequest !== null;
  }

  /** Stop request: SIGTERM to the process group, then SIGKILL after the grace period. Kept on disk. */
  async stop(outcome: StopOutcome, reason: string, graceSeconds: number): Promise<void> {
    if (this.stopRequest || this.exitCode !== null) return;
    this.stopRequest = { outcome, reason };
    await writeAtomic(join(this.dir, "stop"), JSON.stringify(this.stopRequest)).catch(() => {});
    this.signalJob("SIGTERM");
    this.killTimer = setTimeout(() => this.signalJob("SIGKILL"), graceSeconds * 1000);
    this.killTimer.unref();
  }

  kill(): void {
    this.stopRequest ??= { outcome: "lost", reason: "killed at the server's request" };
    this.signalJob("SIGKILL");
  }

  /** How the attempt ended, once its exit code is known; stages outputs out on success. */
  async finish(
    exitCode: number | null,
    reasonIfUnknown = "the job's supervisor vanished",
  ): Promise<AttemptResult> {
    this.exitCode = exitCode;
    this.clearTimers();
    // Whatever the job left running in its group goes with it, and with a cgroup, whatever it
    // left anywhere else (a process in a session of its own).
    this.signal("SIGKILL");
    // A container's processes, in a pid namespace of their own, are killed by its runtime.
    if (this.spec.container && this.context.containers)
      await killContainer(this.context.containers, this.dir);
    const usage = await measureAndEnd(this.cgroup, this.start.ranMs(), this.exitCode, this.dir);
    const result = await this.outcome(exitCode, reasonIfUnknown, usage.oomKills);
    return { ...result, usage };
  }

  private async outcome(
    exitCode: number | null,
    reasonIfUnknown: string,
    oomKills: number,
  ): Promise<AttemptResult> {
    const stop = this.stopRequest;
    // Once more when the attempt stops short of success: the next attempt resumes from here. A
    // job asked to stop stops short of success even when it exits 0 (the SDKs' examples save their
    // state at SIGTERM and exit 0): without this, what it saved then would be lost.
    if (exitCode !== 0 || stop) await this.checkpoint.sync().catch(() => null);
    const ended = outcomeWithoutOutputs(exitCode, stop, oomKills, this.spec.memoryMb, reasonIfUnknown);
    if (ended) return ended;
    try {
      const { uploaded, refused } = await stageOutputs(this.context.http, this.spec, this.runDir, this.owner);
      return outcomeOfOutputs(uploaded, refused);
    } catch (error) {
      return outputsNotStaged(error);
    }
  }

  async cleanup(): Promise<void> {
    this.clearTimers();
    // Its container goes first: its cgroup is under the attempt's, its root mounted in the folder.
    if (this.spec.container && this.context.containers)
      await removeContainer(this.context.containers, this.dir);
    // Emptied when the end was measured (killed here too when the attempt never ended).
    await this.cgroup?.remove();
    if (this.owner !== null || this.spec.container) await removeAttemptFolder(this.dir);
    // Its cgroup seen empty at the end: nothing of the job holds a part of the folder.
    else this.context.spares.retire(this.dir, this.cgroup?.emptied ?? false);
  }

  private clearTimers(): void {
    if (this.killTimer) clearTimeout(this.killTimer);
    if (this.limitTimer) clearTimeout(this.limitTimer);
    if (this.checkpointTimer) clearInterval(this.checkpointTimer);
    this.killTimer = null;
    this.limitTimer = null;
    this.checkpointTimer = null;
  }

  private signal(signal: NodeJS.Signals): void {
    if (this.pid !== null) signalGroup(this.pid, signal);
  }

  /**
   * A stop's signal to a job that has not ended: to its process group, or, when there is none yet,
   * to the job's pid itself. The supervisor reports the pid as soon as it forks the job's shell,
   * and that shell makes the group only with `exec setsid`, job.sh's last step: a stop that came
   * while the attempt was prepared (sent as the pid is reported) or in that moment would miss the
   * job and leave it running until the SIGKILL after the grace period. The pid is signalled only
   * while it is still the job's (its start time as recorded).
   */
  private signalJob(signal: NodeJS.Signals): void {
    if (this.pid === null || this.exitCode !== null) return;
    if (signalGroup(this.pid, signal)) return;
    const found = readProcStat(this.pid);
    if (found === null || found.state === "Z" || found.startTicks !== this.pidStartTime) return;
    try {
      process.kill(this.pid, signal);
    } catch {
      // Gone meanwhile: its exit is on its way.
    }
  }
}

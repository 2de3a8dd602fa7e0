// The settings of the daemons (server, agent, up) from three places: a YAML config file
// (--config FILE or STEWARD_CONFIG), whose keys are the flags' names without the dashes; the
// environment, STEWARD_<FLAG> (upper case, _ for -); and the flags. Flags win over the
// environment, the environment over the file, the file over the defaults. Values from the file and
// the environment go through each option's own parser, so they are checked as a flag would be.

import { readFileSync, statSync } from "node:fs";
import { type Command, InvalidArgumentError, type Option } from "commander";
import { Document, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import { CliError } from "../common/command-line/cli-error.ts";
import { holdsSecret, REDACTED, redactSecrets } from "./redact-secrets.ts";

/** Per flag (by its key, e.g. "token"): its variable instead of STEWARD_<FLAG>, or null for none. */
export type EnvOverrides = Record<string, string | null>;

interface Configurable {
  env: EnvOverrides;
  /** Flags taking a list in the file and a comma-separated list in the environment. */
  repeatable: Set<string>;
}

const CONFIGURABLE = new WeakMap<Command, Configurable>();

/** Options that are no setting: they have no key. */
const NOT_SETTINGS = new Set(["help", "config", "version"]);

/** Variables that already mean something else in Steward, so no flag takes them by the naming rule. */
const RESERVED_ENV: Record<string, string> = {
  STEWARD_TOKEN: "the command line's API token",
  STEWARD_HOST: "a job's host name",
  STEWARD_GPUS: "a job's GPUs",
};

/**
 * Adds --config and marks `command` as one whose options come from a config file and the
 * environment too (the root's preAction hook applies them, before the command runs).
 */
export function configurable(
  command: Command,
  { env = {}, repeatable = [] }: { env?: EnvOverrides; repeatable?: string[] } = {},
): Command {
  CONFIGURABLE.set(command, { env, repeatable: new Set(repeatable) });
  command.option(
    "--config <file>",
    "read settings from this YAML file (or STEWARD_CONFIG): keys are the flags' names without the dashes",
  );
  const unset = settingOptions(command)
    .filter((option) => envName(command, option) === null)
    .map((option) => {
      const reserved = RESERVED_ENV[ruleName(keyOf(option))];
      return reserved ? `${option.long} (${ruleName(keyOf(option))} is ${reserved})` : option.long;
    });
  const renamed = settingOptions(command)
    .filter((option) => typeof env[keyOf(option)] === "string")
    .map((option) => `${option.long} is ${env[keyOf(option)]}`);
  command.addHelpText(
    "after",
    [
      "",
      "Config file and environment:",
      "  --config FILE (or STEWARD_CONFIG) reads YAML: each flag is a key of the same name without the",
      "  dashes (port: 4780, advertise-url: http://h1:4780, no-preempt: true, label: [a=b, c=d]).",
      "  Each flag is also a variable STEWARD_<FLAG>, upper case with _ for - (STEWARD_HEARTBEAT_SECONDS=2;",
      "  a list is comma-separated; true/false/1/0 for a flag without value).",
      ...(renamed.length > 0 ? [`  Except: ${renamed.join(", ")}.`] : []),
      ...(unset.length > 0 ? [`  No variable for: ${unset.join(", ")}.`] : []),
      "  Flags win over the variables, the variables over the file.",
      "  steward config shows the result.",
    ].join("\n"),
  );
  return command;
}

/** The command's options that are settings (all but --help and --config). */
export function settingOptions(command: Command): Option[] {
  return (command.options as Option[]).filter((option) => option.long && !NOT_SETTINGS.has(keyOf(option)));
}

/** The option's key in a config file: its long flag without the dashes (no-preempt). */
export function keyOf(option: Option): string {
  return (option.long ?? "").replace(/^--/, "");
}

/** The option's environment variable, or null when it has none. */
export function envName(command: Command, option: Option): string | null {
  const key = keyOf(option);
  const overrides = CONFIGURABLE.get(command)?.env ?? {};
  if (key in overrides) return overrides[key];
  const name = ruleName(key);
  return name in RESERVED_ENV ? null : name;
}

/** STEWARD_<FLAG>: upper case, _ for -. */
function ruleName(key: string): string {
  return `STEWARD_${key.toUpperCase().replaceAll("-", "_")}`;
}

/** A flag without value (--metrics-open, --no-preempt): true or false in the file. */
function isSwitch(option: Option): boolean {
  return !option.required && !option.optional;
}

/** Where a value came from, for `steward config`. */
export type Source = "default" | "config" | "env" | "cli";

/** How strong a value's source is: a flag over a variable over the file over the default. */
export function settingRank(source: string | undefined): number {
  return ["default", "config", "env", "cli"].indexOf(source ?? "default");
}

/**
 * Applies the config file, then the environment, to the options the command line did not set.
 * A config error or a bad value is a CliError (exit 2) naming the file's line or the variable.
 */
export function applySettings(command: Command, env: NodeJS.ProcessEnv = process.env): void {
  const spec = CONFIGURABLE.get(command);
  if (!spec) return;
  if (command.getOptionValueSource("config") !== "cli" && env.STEWARD_CONFIG)
    command.setOptionValueWithSource("config", env.STEWARD_CONFIG, "env");
  const file: string | undefined = command.getOptionValue("config");
  if (file) applyFile(command, spec, file);
  for (const option of settingOptions(command)) {
    const name = envName(command, option);
    const raw = name === null ? undefined : env[name];
    if (raw === undefined || command.getOptionValueSource(option.attributeName()) === "cli") continue;
    const value = isSwitch(option)
      ? envBoolean(name as string, raw)
      : spec.repeatable.has(keyOf(option))
        ? raw.split(",").map((item) => item.trim())
        : raw;
    setFrom(command, option, value, "env", (message) => `${name}: ${message}`);
  }
}

function envBoolean(name: string, raw: string): boolean {
  const value = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(value)) return true;
  if (["0", "false", "no", "off", ""].includes(value)) return false;
  throw new CliError(`${name}: needs true or false, not ${raw}`, 2);
}

function applyFile(command: Command, spec: Configurable, file: string): void {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new CliError(`--config ${file}: ${(error as Error).message}`, 2);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const lineOf = (node: Node | null | undefined) =>
    node?.range ? lines.linePos(node.range[0]).line : lines.linePos(0).line;
  if (doc.errors.length > 0) {
    const error = doc.errors[0];
    throw new CliError(
      `${file}:${lines.linePos(error.pos[0]).line}: ${error.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "")}`,
      2,
    );
  }
  if (doc.contents === null) return;
  if (!isMap(doc.contents))
    throw new CliError(`${file}:${lineOf(doc.contents)}: needs a map of settings (key: value)`, 2);
  const options = new Map(settingOptions(command).map((option) => [keyOf(option), option]));
  const secrets: string[] = [];
  for (const pair of doc.contents.items) {
    const keyNode = pair.key as Node | null;
    const key = isScalar(keyNode) ? String(keyNode.value) : String(keyNode);
    const at = `${file}:${lineOf(keyNode)}`;
    const option = options.get(key);
    if (!option)
      throw new CliError(
        `${at}: unknown key ${key} (the keys are the flags of steward ${command.name()} without the dashes)`,
        2,
      );
    if (command.getOptionValueSource(option.attributeName()) === "cli") continue;
    const node = pair.value as Node | null;
    const value = fileValue(node, option, spec, (message) => `${at}: ${key}: ${message}`);
    if (value === undefined) continue;
    if (holdsSecret(key, value)) secrets.push(key);
    setFrom(command, option, value, "config", (message) => `${at}: ${key}: ${message}`);
  }
  refuseReadableSecrets(file, secrets);
}

/**
 * A config file that holds a secret (a token, a URL's password) and that other accounts may read
 * (any group or other permission bit) is refused: chmod 600 it, as ssh asks of a private key.
 */
function refuseReadableSecrets(file: string, secrets: string[]): void {
  if (secrets.length === 0) return;
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  throw new CliError(
    `--config ${file} holds secrets (${secrets.join(", ")}) and has mode 0${mode.toString(8)}: other accounts may read it; chmod 600 ${file}`,
    2,
  );
}

/** The file's value as a boolean, a string or a list of strings; undefined for an empty one. */
function fileValue(
  node: Node | null,
  option: Option,
  spec: Configurable,
  where: (message: string) => string,
): boolean | string | string[] | undefined {
  const scalar = (each: Node | null): string | boolean | null => {
    if (!isScalar(each)) throw new CliError(where(`needs a single value, not ${describeNode(each)}`), 2);
    const value = each.value;
    if (value === null || typeof value === "boolean") return value;
    if (typeof value === "string" || typeof value === "number") return String(value);
    throw new CliError(where(`needs a single value, not ${typeof value}`), 2);
  };
  if (isSeq(node)) {
    if (!spec.repeatable.has(keyOf(option)))
      throw new CliError(where("needs a single value, not a list (this flag is not repeatable)"), 2);
    return node.items.map((item) => {
      const value = scalar(item as Node);
      if (typeof value !== "string") throw new CliError(where("needs a list of values"), 2);
      return value;
    });
  }
  const value = node === null ? null : scalar(node);
  if (value === null) return undefined;
  if (isSwitch(option) && typeof value !== "boolean")
    throw new CliError(where(`needs true or false, not ${value}`), 2);
  if (!isSwitch(option) && typeof value === "boolean")
    throw new CliError(where(`needs a value (${option.flags}), not ${value}`), 2);
  return spec.repeatable.has(keyOf(option)) && typeof value === "string" ? [value] : value;
}

function describeNode(node: Node | null): string {
  if (isMap(node)) return "a map";
  if (isSeq(node)) return "a list";
  return "this";
}

/** Sets the option as its flag would, through its parser; a repeatable one starts from its default. */
function setFrom(
  command: Command,
  option: Option,
  value: boolean | string | string[],
  source: "config" | "env",
  where: (message: string) => string,
): void {
  const name = option.attributeName();
  let parsed: unknown;
  try {
    if (typeof value === "boolean") parsed = option.negate ? !value : value;
    else if (Array.isArray(value))
      parsed = value.reduce<unknown>(
        (previous, item) => (option.parseArg ? option.parseArg(item, previous) : item),
        option.defaultValue,
      );
    else parsed = option.parseArg ? option.parseArg(value, option.defaultValue) : value;
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw new CliError(where(error.message), 2);
    throw error;
  }
  command.setOptionValueWithSource(name, parsed, source);
}

const SECRET = REDACTED;

/**
 * The command's effective settings as YAML, keyed as in a config file, each value not a default
 * followed by where it came from; tokens and URL passwords redacted.
 */
export function settingsYaml(command: Command): string {
  const entries: [string, unknown, string | null][] = [];
  for (const option of settingOptions(command)) {
    const key = keyOf(option);
    const name = option.attributeName();
    const raw: unknown = command.getOptionValue(name);
    const source = command.getOptionValueSource(name) as Source | undefined;
    entries.push([key, shown(key, option, raw), origin(command, option, source)]);
  }
  const doc = new Document(Object.fromEntries(entries.map(([key, value]) => [key, value])));
  if (isMap(doc.contents))
    doc.contents.items.forEach((pair, index) => {
      const comment = entries[index][2];
      if (isSeq(pair.value)) pair.value.flow = true;
      if (comment && (isScalar(pair.value) || isSeq(pair.value))) pair.value.comment = ` ${comment}`;
    });
  return doc.toString();
}

function origin(command: Command, option: Option, source: Source | undefined): string | null {
  if (source === "config") return `from ${command.getOptionValue("config")}`;
  if (source === "env") return `from ${envName(command, option)}`;
  if (source === "cli") return "from the command line";
  return null;
}

/** A value as the file would hold it: labels as k=v, times as ISO-8601, secrets redacted. */
function shown(key: string, option: Option, value: unknown): unknown {
  // A switch not set is off (commander gives a lone --no-x its default of true only when parsing).
  if (isSwitch(option) && (value === undefined || value === null)) return false;
  if (value === undefined || value === null) return null;
  if (/token/.test(key) && !key.endsWith("-file") && holdsSecret(key, value)) return SECRET;
  if (option.negate) return !value;
  if (key === "ends-at" && typeof value === "number") return new Date(value).toISOString();
  if (typeof value === "object" && !Array.isArray(value))
    return Object.entries(value as Record<string, unknown>).map(([k, v]) =>
      redactSecrets(`${k}=${String(v)}`),
    );
  if (typeof value === "string") return redactSecrets(value);
  if (Array.isArray(value))
    return value.map((item) => (typeof item === "string" ? redactSecrets(item) : item));
  return value;
}

// Per-task parameters of an array (`array: {params: [...]}` or `array: {paramsFile: NAME}`): task i
// gets the i-th. The server substitutes `${param}` and `${param.KEY}` in the command and the env
// values before it sends a task's start, and gives the task STEWARD_TASK_PARAM and, for a mapping,
// one STEWARD_PARAM_<KEY> per key: the agent runs what it is sent, whatever its version.

import { JobFileError } from "./jobfile-error.ts";

/** One task's parameter: a string, or a mapping of keys to strings, numbers or booleans. */
export type TaskParam = string | Readonly<Record<string, string | number | boolean>>;

/** What a parameter's key may be: it names `${param.KEY}` and STEWARD_PARAM_<KEY>. */
export const PARAM_KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The longest parameter, in characters (a string, or a mapping as JSON): it goes into the environment. */
export const MAX_PARAM_CHARS = 32_768;

/** The variable a mapping's key is given in: STEWARD_PARAM_ + the key upper-cased, other than A-Z 0-9 as `_`. */
export function paramVariable(key: string): string {
  return `STEWARD_PARAM_${key.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/** A parameter as one string: itself, or a mapping as JSON (STEWARD_TASK_PARAM, `${param}`). */
export function paramText(param: TaskParam): string {
  return typeof param === "string" ? param : JSON.stringify(param);
}

/**
 * `${param}`, `${param.KEY}`, each with `:q` or not (`${param:q}`, `${param.KEY:q}`: the value as
 * one shell word), and `$${...}` (an escape: it stays `${...}` as written, less one `$`). The KEY
 * is whatever stands before the `}` or a `:`, checked against the parameter; the modifier is
 * whatever follows the `:`, checked at submit (placeholderProblem).
 */
const PLACEHOLDER = /(\$?)\$\{param(?:\.([^}:]*))?(?::([^}]*))?\}/g;

/** The modifiers a placeholder may have: `q`, the value shell-quoted. */
const MODIFIERS = new Set(["q"]);

/** The keys `${param.KEY}` names in a text (escaped ones left out), and whether `${param}` is used. */
export function placeholdersOf(text: string): { whole: boolean; keys: string[] } {
  let whole = false;
  const keys: string[] = [];
  for (const match of text.matchAll(PLACEHOLDER)) {
    if (match[1] === "$") continue;
    if (match[2] === undefined) whole = true;
    else keys.push(match[2]);
  }
  return { whole, keys };
}

/** What is wrong with a text's placeholders (a modifier other than `:q`), or null. */
export function placeholderProblem(text: string): string | null {
  for (const match of text.matchAll(PLACEHOLDER)) {
    if (match[1] === "$" || match[3] === undefined || MODIFIERS.has(match[3])) continue;
    return `${match[0]}: no modifier :${match[3]} (\${param:q} is the parameter as one shell word)`;
  }
  return null;
}

/**
 * `text` as one word of the POSIX shell, whatever it holds: in single quotes, each `'` closed,
 * escaped and reopened (`it's` is `'it'\''s'`). The shell reads it back as the very text: no
 * expansion, no splitting, no command.
 */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/**
 * A text with the task's parameter put in: `${param}` is paramText, `${param.KEY}` the key's value
 * as a string (a number as JSON writes it, a boolean `true`/`false`), either shell-quoted with
 * `:q` (shellQuote), `$${...}` stays `${...}`. Throws when a key is not in the parameter or a
 * modifier is unknown (a submit checks both first: paramsProblem, placeholderProblem).
 */
export function substituteParam(text: string, param: TaskParam): string {
  return text.replace(
    PLACEHOLDER,
    (whole, escaped: string, key: string | undefined, modifier: string | undefined) => {
      if (escaped === "$") return whole.slice(1);
      if (modifier !== undefined && !MODIFIERS.has(modifier))
        throw new Error(`${whole}: no modifier :${modifier}`);
      let value: string;
      if (key === undefined) value = paramText(param);
      else if (typeof param === "string" || !Object.hasOwn(param, key))
        throw new Error(`\${param.${key}}: the task's parameter has no key ${key}`);
      else value = String(param[key]);
      return modifier === "q" ? shellQuote(value) : value;
    },
  );
}

/** The variables a task's parameter gives it: STEWARD_TASK_PARAM, and STEWARD_PARAM_<KEY> per key of a mapping. */
export function paramEnvironment(param: TaskParam): Record<string, string> {
  const environment: Record<string, string> = { STEWARD_TASK_PARAM: paramText(param) };
  if (typeof param !== "string")
    for (const [key, value] of Object.entries(param)) environment[paramVariable(key)] = String(value);
  return environment;
}

/** A task's command and env with its parameter put in, and the parameter's variables set over the env. */
export function taskLaunch(
  command: string | readonly string[],
  env: Readonly<Record<string, string>>,
  param: TaskParam,
): { command: string | string[]; env: Record<string, string> } {
  const substituted: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) substituted[name] = substituteParam(value, param);
  return {
    command:
      typeof command === "string"
        ? substituteParam(command, param)
        : command.map((part) => substituteParam(part, param)),
    env: { ...substituted, ...paramEnvironment(param) },
  };
}

/**
 * What is wrong with an array's parameters, or null: the parameter's index (and the key, for a bad
 * key) and why. A key that is not a PARAM_KEY_PATTERN, two keys of one mapping that give the same
 * variable, a parameter longer than MAX_PARAM_CHARS, a `${param.KEY}` in the command or env that a
 * parameter does not have (or that a string parameter is given); an output's `to` counts as the
 * command does.
 */
export function paramsProblem(
  params: readonly TaskParam[],
  uses: {
    command: string | readonly string[];
    env: Readonly<Record<string, string>>;
    /** Outputs pushed to a URL name the parameter in their `to` too (output-spec.ts). */
    outputs?: readonly (string | { to: string })[];
  },
): { index: number; key?: string; message: string } | null {
  const named = new Set<string>();
  const texts = [
    ...(typeof uses.command === "string" ? [uses.command] : uses.command),
    ...Object.values(uses.env),
    ...(uses.outputs ?? []).flatMap((output) => (typeof output === "string" ? [] : [output.to])),
  ];
  for (const text of texts) for (const key of placeholdersOf(text).keys) named.add(key);
  const firstNamed = named.values().next().value;
  for (let index = 0; index < params.length; index++) {
    const param = params[index];
    if (paramText(param).length > MAX_PARAM_CHARS)
      return { index, message: `longer than ${MAX_PARAM_CHARS} characters` };
    if (typeof param === "string") {
      if (firstNamed !== undefined)
        return {
          index,
          message: `a string, but the command or env names \${param.${firstNamed}}: a mapping with key ${firstNamed} is needed`,
        };
      continue;
    }
    const variables = new Map<string, string>();
    for (const key of Object.keys(param)) {
      if (!PARAM_KEY_PATTERN.test(key))
        return { index, key, message: "not a parameter key (1 to 64 letters, digits, _ or -)" };
      const variable = paramVariable(key);
      const other = variables.get(variable);
      if (other !== undefined)
        return { index, message: `keys ${other} and ${key} would both be ${variable}` };
      variables.set(variable, key);
    }
    for (const key of named)
      if (!Object.hasOwn(param, key))
        return { index, message: `has no key ${key}, which the command or env names (\${param.${key}})` };
  }
  return null;
}

/**
 * A parameters file's lines, one per task: a final line break ends the last line (it makes no
 * task), `\r\n` is taken as `\n`, and an empty line is refused (it would be a task with nothing to
 * do, or a line break too many). Throws JobFileError naming `array.paramsFile`.
 */
export function paramsFileLines(text: string, name: string): string[] {
  const body = text.endsWith("\n") ? text.slice(0, -1) : text;
  if (body.length === 0)
    throw new JobFileError("array.paramsFile", `${name} is empty: it needs one line per task`);
  const lines = body.split("\n");
  for (let index = 0; index < lines.length; index++) {
    let line = lines[index];
    if (line.endsWith("\r")) line = line.slice(0, -1);
    lines[index] = line;
    if (line.length === 0)
      throw new JobFileError(
        "array.paramsFile",
        `${name}: line ${index + 1} is empty (each line is one task's parameter)`,
      );
  }
  return lines;
}

/** That a count the job file gives and its parameters' number agree: the message names both. */
export function countProblem(count: number | undefined, params: number, source: string): string | null {
  if (count === undefined || count === params) return null;
  return `count ${count} does not match the ${params} parameters of ${source}: leave count out, or make them agree`;
}

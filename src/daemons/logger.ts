// Daemon logs on stderr through pino: JSON lines for programs, or one readable line per event on a
// terminal. The format is `--log-format json|text` (or STEWARD_LOG_FORMAT); by default text when
// stderr is a terminal, JSON otherwise. The level is STEWARD_LOG_LEVEL (default info).

import { Option } from "commander";
import pino, { type Logger } from "pino";

export const LOG_FORMATS = ["json", "text"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

const LEVELS: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

/** The format asked for, else text on a terminal and JSON elsewhere. */
export function logFormatOf(asked: string | undefined, isTerminal: boolean): LogFormat {
  const format = asked ?? process.env.STEWARD_LOG_FORMAT;
  if (format === "json" || format === "text") return format;
  return isTerminal ? "text" : "json";
}

/** `--log-format` of every daemon. */
export const logFormatOption = () =>
  new Option(
    "--log-format <format>",
    "json, or text (one readable line per event); default text on a terminal",
  );

export function daemonLogger(format?: string): Logger {
  const level = process.env.STEWARD_LOG_LEVEL ?? "info";
  if (logFormatOf(format, process.stderr.isTTY === true) === "json")
    return pino({ level }, pino.destination(2));
  return pino({ level }, { write: (line: string) => void process.stderr.write(textLine(line)) });
}

/** One pino JSON line as `12:03:04.567 WARN  message key=value ... error: why`. Pure. */
export function textLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith("\n") ? json : `${json}\n`;
  }
  const { level, time, msg, pid: _pid, hostname: _hostname, err, ...rest } = entry;
  const at = typeof time === "number" ? new Date(time).toISOString().slice(11, 23) : "";
  const name = (LEVELS[Number(level)] ?? String(level)).padEnd(5);
  const fields = Object.entries(rest).map(([key, value]) => `${key}=${fieldText(value)}`);
  const error = err && typeof err === "object" && "message" in err ? ` error: ${String(err.message)}` : "";
  return `${[at, name, String(msg ?? ""), ...fields].filter(Boolean).join(" ")}${error}\n`;
}

function fieldText(value: unknown): string {
  if (typeof value === "string") return /\s/.test(value) ? JSON.stringify(value) : value;
  return JSON.stringify(value);
}

import pino, { type Logger } from "pino";

/** Daemon logs: JSON lines on stderr (pino), level from STEWARD_LOG_LEVEL (default info). */
export function daemonLogger(): Logger {
  return pino({ level: process.env.STEWARD_LOG_LEVEL ?? "info" }, pino.destination(2));
}

import { InvalidArgumentError } from "commander";

export function number(flag: string) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < 0)
      throw new InvalidArgumentError(`${flag} needs a number, not ${value}`);
    return parsed;
  };
}

export function integer(flag: string, min = 0) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min) {
      throw new InvalidArgumentError(`${flag} needs a whole number of at least ${min}, not ${value}`);
    }
    return parsed;
  };
}

export function labels(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const match = /^([^=]+)=(.*)$/.exec(value);
  if (!match) throw new InvalidArgumentError(`--label needs key=value, not ${value}`);
  return { ...previous, [match[1]]: match[2] };
}

/** SIGINT/SIGTERM: close cleanly once; a second signal exits at once. */
export function onShutdown(close: () => Promise<void>): void {
  let closing = false;
  const handler = (signal: string) => {
    if (closing) process.exit(130);
    closing = true;
    process.stderr.write(`steward: ${signal}, shutting down\n`);
    close().then(
      () => process.exit(0),
      (error) => {
        process.stderr.write(`steward: shutdown failed: ${error}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}

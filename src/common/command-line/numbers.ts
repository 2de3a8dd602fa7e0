// Numeric flags: a clear error naming the flag for anything else. Apart from src/daemons/options.ts, whose
// defaults come from the scheduler, so that light commands (ps) do not load it.

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

// An output the server refuses for its full storage (507) is sent again later: the waits between
// tries double from a second up to half a minute.

import { expect, it } from "vitest";
import {
  OUTPUT_STORAGE_FULL_FIRST_DELAY_MS,
  OUTPUT_STORAGE_FULL_MAX_DELAY_MS,
  storageFullDelayMs,
} from "../../../../src/agent/files/staging.ts";

it("waits a second after the first refusal, doubling up to half a minute", () => {
  expect(OUTPUT_STORAGE_FULL_FIRST_DELAY_MS).toBe(1000);
  expect(OUTPUT_STORAGE_FULL_MAX_DELAY_MS).toBe(30_000);
  const cases: [number, number][] = [
    [0, 1000],
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [5, 16_000],
    [6, 30_000],
    [40, 30_000],
  ];
  for (const [tries, wait] of cases) expect(storageFullDelayMs(tries), `after ${tries}`).toBe(wait);
});

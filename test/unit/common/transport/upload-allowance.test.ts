import { describe, expect, it } from "vitest";
import {
  UPLOAD_MIN_BYTES_PER_SECOND,
  UPLOAD_RATE_HALVINGS,
  uploadAllowanceMs,
} from "../../../../src/common/transport/upload-allowance.ts";

describe("uploadAllowanceMs", () => {
  it("allows a body its size at 1 MiB/s, halving the rate for each try that timed out, down to 16 KiB/s", () => {
    expect([UPLOAD_MIN_BYTES_PER_SECOND, UPLOAD_RATE_HALVINGS]).toEqual([1024 * 1024, 6]);
    const MiB = 1024 * 1024;
    const cases = [
      { bytes: 0, slowTries: 0, ms: 0 },
      { bytes: 0, slowTries: 3, ms: 0 },
      { bytes: MiB, slowTries: 0, ms: 1000 },
      { bytes: MiB, slowTries: 1, ms: 2000 },
      { bytes: MiB, slowTries: 2, ms: 4000 },
      { bytes: MiB, slowTries: 6, ms: 64_000 },
      // The floor: no slower than 16 KiB/s, however many tries timed out.
      { bytes: MiB, slowTries: 7, ms: 64_000 },
      { bytes: MiB, slowTries: 100, ms: 64_000 },
      // Rounded up to the millisecond.
      { bytes: 1, slowTries: 0, ms: 1 },
      { bytes: 1536 * 1024, slowTries: 0, ms: 1500 },
      { bytes: 1536 * 1024, slowTries: -1, ms: 1500 },
    ];
    for (const { bytes, slowTries, ms } of cases)
      expect(uploadAllowanceMs(bytes, slowTries), JSON.stringify({ bytes, slowTries })).toBe(ms);
  });
});

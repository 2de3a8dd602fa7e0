// The aligned tables of the CLI's plain-text output.

import { describe, expect, it } from "vitest";
import { table } from "../../../src/cli/format.ts";

describe("table", () => {
  it("aligns the columns two spaces apart under their headers", () => {
    expect(
      table(
        ["ID", "STATE"],
        [
          ["12", "running"],
          ["7", "failed"],
        ],
      ),
    ).toBe("ID  STATE\n12  running\n7   failed");
  });

  it("without the header, aligns the rows by themselves", () => {
    expect(
      table(
        ["IDENTIFIER", "STATE"],
        [
          ["12", "running"],
          ["7", "failed"],
        ],
        { header: false },
      ),
    ).toBe("12  running\n7   failed");
  });
});

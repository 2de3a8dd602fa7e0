// The broker's own records changed through the reactor (handlers/broker-records.ts), as pure
// handlers (test/helpers/handler-bench.ts): a meta entry set, kept in memory and recorded; a purge
// of accounting rows recorded with the time before which attempts ended are dropped.

import { describe, expect, it } from "vitest";
import { purgeAccounting, setMeta } from "../../../../../src/broker/reactor/handlers/broker-records.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

describe("the broker's own records", () => {
  it("a meta entry is set in memory and recorded", () => {
    const bench = new HandlerBench();
    const handled = bench.run((step) => setMeta(step, "pilots.gpu", '["p-1"]'));
    expect(handled.changes).toEqual([{ op: "setMeta", key: "pilots.gpu", value: '["p-1"]' }]);
    expect(bench.state.meta.get("pilots.gpu")).toBe('["p-1"]');
  });

  it("a purge drops the rows of attempts that ended more than the days given before now", () => {
    const bench = new HandlerBench();
    bench.now = 10 * 86_400_000;
    const handled = bench.run((step) => purgeAccounting(step, 3));
    expect(handled.changes).toEqual([{ op: "purgeAccounting", endedBefore: 7 * 86_400_000 }]);
  });
});

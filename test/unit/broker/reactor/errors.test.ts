// A request that needs the leader on a server that does not lead (or no longer does: the store
// refused its term) is told apart from every other error: the API answers it 503, to ask the leader.

import { expect, it } from "vitest";
import { ConflictError, isNotLeading, NotLeaderError } from "../../../../src/broker/reactor/errors.ts";
import { StaleTermError } from "../../../../src/broker/store/store.ts";

it("takes a standby's refusal and a refused term for not leading, and nothing else", () => {
  expect(isNotLeading(new NotLeaderError(null))).toBe(true);
  expect(isNotLeading(new NotLeaderError("http://leader:4780"))).toBe(true);
  expect(isNotLeading(new StaleTermError(3, 4))).toBe(true);
  expect(isNotLeading(new ConflictError("job 7 is running"))).toBe(false);
  expect(isNotLeading(new Error("this server is standby"))).toBe(false);
  expect(isNotLeading(null)).toBe(false);
});

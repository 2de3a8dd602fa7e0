// `host.enforces` in requirements: a known fact of type bool; true where the agent enforces limits,
// false where it does not, and not evaluable (so not matched) for an agent that does not say.

import { expect, it } from "vitest";
import { checkExpression, compileExpression, evaluateRequirement } from "../../../../src/common/model/cel.ts";
import { facts } from "../../../helpers/core-harness.ts";

it.each([
  [true, true],
  [false, false],
  [undefined, false],
])("requirements host.enforces on a host that says %j: matched %j", (enforces, matched) => {
  expect(checkExpression("host.enforces", "requirements")).toBeNull();
  const host = { ...facts("h"), ...(enforces === undefined ? {} : { enforces }) };
  if (enforces === undefined) delete host.enforces;
  expect(evaluateRequirement(compileExpression("host.enforces"), host).ok).toBe(matched);
});

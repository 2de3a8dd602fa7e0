// Run in every test file's worker before its tests (vitest setupFiles).

import { afterAll } from "vitest";
import { removeEndedAgentsCgroups } from "./helpers/started-agents.ts";

// The cgroups of the agents the file started and killed go with the file (helpers/started-agents.ts).
afterAll(async () => {
  await removeEndedAgentsCgroups();
});

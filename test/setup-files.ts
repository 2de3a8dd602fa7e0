// Run in every test file's worker before its tests (vitest setupFiles).

import { afterAll } from "vitest";
import { cleanUpEndedAgents } from "./helpers/started-agents.ts";

// What the agents the file started and killed left goes with the file (helpers/started-agents.ts).
afterAll(async () => {
  await cleanUpEndedAgents();
});

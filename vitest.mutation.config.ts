// The tests a mutation run (npm run mutation, stryker.config.json) kills mutants with: the unit
// tests (pure logic, no processes or servers) and the CEL guard's and cost estimate's, which are
// unit tests kept with the security ones. Real-process tests are too slow to run once per mutant.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "test/unit/**/*.test.ts",
      "test/security/cel-guard.test.ts",
      "test/security/cel-cost-estimate.test.ts",
    ],
    // These read the checkout as a whole (its git files, its docs), which a mutation run copies in part.
    exclude: [
      "test/unit/import-rules.test.ts",
      "test/unit/docs-fresh.test.ts",
      "test/unit/self-contained.test.ts",
    ],
    setupFiles: ["test/setup-files.ts"],
    testTimeout: 60_000,
    pool: "forks",
    maxWorkers: 1,
  },
});

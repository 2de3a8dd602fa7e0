// Prints the mutation score of each folder of a mutation run's report (stryker.config.json writes
// reports/mutation/mutation.json): detected (killed or timed out) over detected and undetected
// (survived or not covered), as Stryker counts it; mutants that did not compile or ran into a
// runtime error count in neither. Usage: node scripts/mutation-score.ts [REPORT]

import { readFileSync } from "node:fs";
import { dirname } from "node:path";

interface Report {
  files: Record<string, { mutants: { status: string }[] }>;
}

const DETECTED = new Set(["Killed", "Timeout"]);
const UNDETECTED = new Set(["Survived", "NoCoverage"]);

const path = process.argv[2] ?? "reports/mutation/mutation.json";
const report = JSON.parse(readFileSync(path, "utf8")) as Report;
const folders = new Map<
  string,
  { detected: number; undetected: number; survived: number; noCoverage: number }
>();
for (const [file, { mutants }] of Object.entries(report.files)) {
  const folder = dirname(file);
  const counts = folders.get(folder) ?? { detected: 0, undetected: 0, survived: 0, noCoverage: 0 };
  for (const { status } of mutants) {
    if (DETECTED.has(status)) counts.detected++;
    else if (UNDETECTED.has(status)) counts.undetected++;
    if (status === "Survived") counts.survived++;
    if (status === "NoCoverage") counts.noCoverage++;
  }
  folders.set(folder, counts);
}
const rows = [...folders].sort(([a], [b]) => a.localeCompare(b));
const width = Math.max(...rows.map(([folder]) => folder.length), "FOLDER".length);
console.log(`${"FOLDER".padEnd(width)}  SCORE   DETECTED  SURVIVED  NO COVERAGE`);
for (const [folder, counts] of rows) {
  const total = counts.detected + counts.undetected;
  const score = total === 0 ? "-" : `${((100 * counts.detected) / total).toFixed(2)} %`;
  console.log(
    `${folder.padEnd(width)}  ${score.padStart(7)}  ${String(counts.detected).padStart(8)}  ${String(counts.survived).padStart(8)}  ${String(counts.noCoverage).padStart(11)}`,
  );
}

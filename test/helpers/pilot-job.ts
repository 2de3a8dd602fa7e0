// A job for pilot tests: it counts to `steps`, one step a second, keeping its count in its
// checkpoint folder (replaced atomically), and starts from the count a checkpoint gives it. Its
// first line says where it started, so a test can tell a restart from a checkpoint from a fresh one.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StewardProcess } from "./steward.ts";

export function countingScript(dir: string, steps: number): string {
  const path = join(dir, "count.sh");
  writeFileSync(
    path,
    [
      "#!/bin/bash",
      'f="$STEWARD_CHECKPOINT_DIR/step"',
      'n=$(cat "$f" 2>/dev/null || echo 0)',
      'echo "start at $n attempt=$STEWARD_ATTEMPT host=$STEWARD_HOST restarted=$STEWARD_RESTARTED"',
      "trap 'exit 143' TERM",
      `while [ "$n" -lt ${steps} ]; do`,
      "  sleep 1",
      "  n=$((n + 1))",
      '  echo "$n" > "$f.tmp" && mv "$f.tmp" "$f"',
      `  awk "BEGIN { print $n / ${steps} }" > "$STEWARD_PROGRESS_FILE"`,
      "done",
      'echo "done at $n"',
    ].join("\n"),
    { mode: 0o755 },
  );
  return path;
}

/** The stdout of one attempt of task 0. */
export async function attemptLog(server: StewardProcess, id: string, attempt: number): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=0&attempt=${attempt}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  return response.ok ? response.text() : "";
}

/** Where an attempt's log says it started counting, or null before it has said. */
export function startedAt(log: string): number | null {
  const match = /^start at (\d+)/m.exec(log);
  return match ? Number(match[1]) : null;
}

// Plain-text output helpers: aligned tables and short times.

/** Aligned columns, two spaces apart, the headers first (left out with `header: false`). */
export function table(
  headers: string[],
  rows: (string | number)[][],
  { header = true }: { header?: boolean } = {},
): string {
  const cells = [...(header ? [headers] : []), ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column]?.length ?? 0)));
  return cells
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column])))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export function shortTime(iso: string | null): string {
  if (!iso) return "-";
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

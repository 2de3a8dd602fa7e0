// A document's tour: the commands of its `console` blocks, each with the output and exit code the
// document shows, read so that a test can run them in order and check each against what it shows.
//
// In a ```console block, a line starting `$ ` is a command (a line ending in `\` goes on on the
// next); the lines after it, up to the next command or the block's end, are what it prints (stdout
// and stderr as a terminal shows them). In those lines `...` stands for any text, and a line that is
// `...` alone for any number of lines. A command's comment `# exits N` says it exits with N (else
// 0); a command ending in `&` is started in the background and left running, its output not
// checked. Blocks of other kinds (```sh, ```yaml) are text, not part of the tour.

/** One command of the tour, as the document writes it. */
export interface TourStep {
  /** The command as written (continuation lines joined, the `$ ` prompt and a trailing `&` removed). */
  command: string;
  /** Started in the background (`&`) and left running. */
  background: boolean;
  /** The lines it prints, as the document shows them (with `...` wildcards). */
  expected: string[];
  /** The exit code the document gives it (`# exits N`), 0 when it names none. */
  exitCode: number;
  /** The line of the document the command starts on (1-based), for messages. */
  line: number;
}

const FENCE = /^```(\S*)\s*$/;
const EXITS = /#.*\bexits (\d+)\b/;

/** The commands of the document's `console` blocks, in order. */
export function tourSteps(markdown: string): TourStep[] {
  const steps: TourStep[] = [];
  const lines = markdown.split("\n");
  let inConsole = false;
  let inOther = false;
  let current: TourStep | null = null;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i];
    const fence = FENCE.exec(text);
    if (fence && !inConsole && !inOther) {
      if (fence[1] === "console") inConsole = true;
      else inOther = true;
      continue;
    }
    if (fence && text.trim() === "```") {
      inConsole = false;
      inOther = false;
      current = null;
      continue;
    }
    if (!inConsole) continue;
    if (text.startsWith("$ ")) {
      let command = text.slice(2);
      const line = i + 1;
      while (command.endsWith("\\") && i + 1 < lines.length) {
        i++;
        command = `${command.slice(0, -1)}\n${lines[i]}`;
      }
      const exits = EXITS.exec(command);
      const trimmed = withoutComment(command).trimEnd();
      const background = trimmed.endsWith("&") && !trimmed.endsWith("&&");
      current = {
        command: background ? trimmed.slice(0, -1).trimEnd() : command,
        background,
        expected: [],
        exitCode: exits ? Number(exits[1]) : 0,
        line,
      };
      steps.push(current);
    } else if (current) current.expected.push(text);
  }
  return steps;
}

/** The command less a trailing comment: the text from the last ` #` outside quotes. */
function withoutComment(command: string): string {
  let quote: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "#" && (i === 0 || /\s/.test(command[i - 1]))) return command.slice(0, i);
  }
  return command;
}

/** Why `actual` is not what `expected` shows (null when it is), both as lines. */
export function outputMismatch(expected: readonly string[], actual: readonly string[]): string | null {
  const want = trimTrailingBlank(expected);
  const got = trimTrailingBlank(actual);
  return linesMatch(want, 0, got, 0)
    ? null
    : `expected:\n${want.map((l) => `  | ${l}`).join("\n")}\ngot:\n${got.map((l) => `  | ${l}`).join("\n")}`;
}

function linesMatch(want: readonly string[], w: number, got: readonly string[], g: number): boolean {
  if (w === want.length) return g === got.length;
  if (want[w].trim() === "...") {
    for (let skip = g; skip <= got.length; skip++) if (linesMatch(want, w + 1, got, skip)) return true;
    return false;
  }
  return g < got.length && lineMatches(want[w], got[g]) && linesMatch(want, w + 1, got, g + 1);
}

/** One line against its pattern: `...` stands for any text; trailing spaces do not count. */
export function lineMatches(pattern: string, line: string): boolean {
  const parts = pattern.trimEnd().split("...").map(escapeRegExp);
  return new RegExp(`^${parts.join(".*")}$`).test(line.trimEnd());
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function trimTrailingBlank(lines: readonly string[]): string[] {
  const kept = [...lines];
  while (kept.length > 0 && kept[kept.length - 1].trim() === "") kept.pop();
  return kept;
}

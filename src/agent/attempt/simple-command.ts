// A job's command string that a shell would only split into words and run as a program: run
// without the shell. `/bin/sh -c "true"` starts a shell that finds `true` on the PATH and execs it
// (dash does, as its last command): the job's own program is the same, and the shell's start (an
// exec and the loading of a program) was a fifth of the machine per short task. GNU make takes the
// same shortcut for its recipe lines. The string must hold no character a shell gives a meaning
// (quotes, `$`, globs, redirections, separators, `~`, `#`, `\`, tabs, newlines), its first word
// must not set a variable, and it must not name a shell builtin or reserved word that is not also
// a program of the same meaning (`cd`, `exit`, `echo`, `kill`, `test`; but `true` and `false` are
// programs alike).

/** Characters that mean nothing to a shell in a word (beside letters and digits). */
const PLAIN_WORDS = /^[A-Za-z0-9_./,:+@%=-]+( +[A-Za-z0-9_./,:+@%=-]+)* *$/;

/**
 * Builtins and reserved words of POSIX sh, dash and bash that act on the shell itself, are not
 * programs, or differ from the program of their name (`echo -e`, `pwd` with links, `kill`'s options).
 * Those spelt with a character PLAIN_WORDS refuses (`!`, `[`, `{`) never get this far.
 */
export const SHELL_WORDS: ReadonlySet<string> = new Set([
  ".",
  ":",
  "alias",
  "bg",
  "bind",
  "break",
  "builtin",
  "case",
  "cd",
  "command",
  "continue",
  "declare",
  "do",
  "done",
  "echo",
  "elif",
  "else",
  "esac",
  "eval",
  "exec",
  "exit",
  "export",
  "fc",
  "fg",
  "fi",
  "for",
  "function",
  "getopts",
  "hash",
  "if",
  "in",
  "jobs",
  "kill",
  "let",
  "local",
  "printf",
  "pwd",
  "read",
  "readonly",
  "return",
  "select",
  "set",
  "shift",
  "source",
  "test",
  "then",
  "time",
  "times",
  "trap",
  "type",
  "typeset",
  "ulimit",
  "umask",
  "unalias",
  "unset",
  "until",
  "wait",
  "while",
]);

/** The words `sh -c command` would run as a program, or null when the command needs the shell. */
export function shellFreeWords(command: string): string[] | null {
  if (!PLAIN_WORDS.test(command)) return null;
  const words = command.trimEnd().split(/ +/);
  const program = words[0];
  if (program.includes("=") || program.startsWith("-") || SHELL_WORDS.has(program)) return null;
  return words;
}

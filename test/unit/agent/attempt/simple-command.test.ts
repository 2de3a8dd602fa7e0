// Which command strings run without a shell (src/agent/attempt/simple-command.ts): plain words whose first
// is a program, not a builtin, an assignment or anything a shell gives a meaning.

import { describe, expect, it } from "vitest";
import { SHELL_WORDS, shellFreeWords } from "../../../../src/agent/attempt/simple-command.ts";

describe("shellFreeWords", () => {
  it.each([
    ["true", ["true"]],
    ["false", ["false"]],
    ["sleep 30", ["sleep", "30"]],
    ["/usr/bin/env", ["/usr/bin/env"]],
    ["./simulate --steps=100 -v", ["./simulate", "--steps=100", "-v"]],
    ["dd if=in of=out bs=1M", ["dd", "if=in", "of=out", "bs=1M"]],
    [
      "python3 run.py a,b host:80 x+y user@host 50%",
      ["python3", "run.py", "a,b", "host:80", "x+y", "user@host", "50%"],
    ],
    ["sleep  1 ", ["sleep", "1"]],
  ])("%j runs as %j", (command, words) => {
    expect(shellFreeWords(command)).toEqual(words);
  });

  it.each([
    ["a variable", "echo $HOME"],
    ["a quote", "echo 'hi'"],
    ["a double quote", 'grep "a b" f'],
    ["a glob", "ls *.txt"],
    ["a question mark", "ls file?"],
    ["brackets", "ls [ab]"],
    ["a redirection", "sort < in"],
    ["an output redirection", "date > out"],
    ["a pipe", "seq 3 | wc -l"],
    ["a separator", "true; false"],
    ["an and", "true && false"],
    ["a background", "sleep 1 &"],
    ["a subshell", "(cd /tmp)"],
    ["a command substitution", "echo `date`"],
    ["a tilde", "ls ~"],
    ["a comment", "true # done"],
    ["a backslash", "printf a\\nb"],
    ["a newline", "true\nfalse"],
    ["a tab", "sleep\t1"],
    ["a leading space", " true"],
    ["an assignment first", "X=1 env"],
    ["an assignment alone", "X=1"],
    ["a leading dash", "-x"],
    ["the empty string", ""],
    ["only spaces", "   "],
    ["a builtin", "cd /tmp"],
    ["exit", "exit 3"],
    ["echo (its options differ from /bin/echo's)", "echo -e hi"],
    ["kill", "kill 1"],
    ["a reserved word", "if true"],
    ["test", "test -f x"],
    ["source", ". ./env"],
    ["exec", "exec sleep 1"],
  ])("needs the shell with %s", (_, command) => {
    expect(shellFreeWords(command)).toBeNull();
  });

  it("knows the POSIX special builtins", () => {
    for (const word of [
      ".",
      ":",
      "break",
      "continue",
      "eval",
      "exec",
      "exit",
      "export",
      "readonly",
      "return",
      "set",
      "shift",
      "times",
      "trap",
      "unset",
    ])
      expect(SHELL_WORDS.has(word)).toBe(true);
  });
});

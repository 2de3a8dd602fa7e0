// Shell completion scripts for bash, zsh and fish, written from the commands' definitions: the
// commands, their subcommands and options are fixed in the script; job ids (`steward ps --json`)
// and workflow ids (`steward ps --workflows --json`) are asked of the server at each TAB, so they
// are the ones it has now. Ids are taken as data: only words of the characters ids are made of are
// kept, and they are offered without the shell expanding them.

import type { Command } from "commander";

/** Commands whose argument is a job id, and whether ended jobs are worth offering too. */
const JOB_ID_COMMANDS: Record<string, "live" | "all"> = {
  show: "all",
  status: "all",
  logs: "all",
  fetch: "all",
  explain: "all",
  rm: "all",
  wait: "live",
  cancel: "live",
  hold: "live",
  release: "live",
  migrate: "live",
  update: "live",
  retry: "all",
};

/** Of those, the ones that take a workflow's id (flow-N) too. */
const WORKFLOW_ID_COMMANDS = new Set(Object.keys(JOB_ID_COMMANDS).filter((name) => name !== "migrate"));

/** Commands that take a command line after `--` (steward run -- CMD ARGS): commands, then files. */
const ARGV_COMMANDS = new Set(["run"]);

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

interface CommandWords {
  name: string;
  description: string;
  /** Every spelling of every option (`-f`, `--follow`), `--help` included. */
  options: string[];
  /** Options that take a value: the word after them is theirs. */
  valued: string[];
  subcommands: CommandWords[];
  jobIds: "live" | "all" | null;
  /** Workflow ids are offered with the job ids. */
  workflowIds: boolean;
  /** Takes a command line after `--`. */
  argv: boolean;
}

function wordsOf(command: Command): CommandWords {
  const options = command.options.flatMap((option) => [option.short, option.long].filter(isWord));
  const valued = command.options
    .filter((option) => option.required || option.optional)
    .flatMap((option) => [option.short, option.long].filter(isWord));
  return {
    name: command.name(),
    description: command.description(),
    options: [...options, "--help"],
    valued,
    subcommands: command.commands.map(wordsOf),
    jobIds: JOB_ID_COMMANDS[command.name()] ?? null,
    workflowIds: WORKFLOW_ID_COMMANDS.has(command.name()),
    argv: ARGV_COMMANDS.has(command.name()),
  };
}

function isWord(value: string | undefined): value is string {
  return typeof value === "string" && value.length > 0;
}

/** The completion script for `shell`, from `program` with every command registered in full. */
export function completionScript(program: Command, shell: Shell): string {
  const root = wordsOf(program);
  if (shell === "fish") return fishScript(root);
  const bash = bashFunction(root);
  if (shell === "bash") return `# steward completion for bash: source <(steward completion bash)\n${bash}`;
  // zsh runs the bash function through its bash compatibility layer.
  return `#compdef steward\n# steward completion for zsh: source <(steward completion zsh)\nautoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n${bash}`;
}

function bashFunction(root: CommandWords): string {
  const cases = root.subcommands
    .map((command) => {
      const lines = [`      ${command.name})`];
      lines.push(`        options=${shellWord(command.options.join(" "))}`);
      if (command.valued.length > 0) lines.push(`        valued=${shellWord(command.valued.join(" "))}`);
      if (command.subcommands.length > 0)
        lines.push(
          `        subcommands=${shellWord(command.subcommands.map((each) => each.name).join(" "))}`,
        );
      if (command.jobIds) lines.push(`        jobs=${command.jobIds}`);
      if (command.workflowIds) lines.push("        flows=1");
      if (command.argv) lines.push("        argv=1");
      for (const sub of command.subcommands)
        lines.push(
          `        [[ $sub == ${sub.name} ]] && options=${shellWord(sub.options.join(" "))} valued=${shellWord(sub.valued.join(" "))}`,
        );
      lines.push("        ;;");
      return lines.join("\n");
    })
    .join("\n");
  return `_steward_job_ids() {
  # The ids of \`steward ps [--all] --json\`: each job's top-level "id" (printed with two-space
  # indents); with --workflows, then those of \`steward ps --workflows [--all] --json\` (flow-N). Only
  # ids of the characters ids are made of are kept. A server that does not answer would hold the TAB
  # for the client's 5 s of retries: 3 s at most, and the workflows are not asked for then.
  local run=(command steward) all=() workflows="" arg listed
  for arg in "$@"; do
    case $arg in
      --all) all=(--all) ;;
      --workflows) workflows=1 ;;
    esac
  done
  if command -v timeout >/dev/null; then run=(timeout 3 steward); fi
  listed=$("\${run[@]}" ps "\${all[@]}" --json 2>/dev/null) || return 0
  sed -n 's/^    "id": "\\([A-Za-z0-9._-][A-Za-z0-9._-]*\\)".*/\\1/p' <<<"$listed"
  if [[ -n $workflows ]]; then
    "\${run[@]}" ps --workflows "\${all[@]}" --json 2>/dev/null |
      sed -n 's/^    "workflow": "\\(flow-[1-9][0-9]*\\)".*/\\1/p'
  fi
}

_steward() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
  local command="" sub="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case \${COMP_WORDS[i]} in
      --ca) ((i++)) ;;
      -*) ;;
      *) command=\${COMP_WORDS[i]}; break ;;
    esac
  done
  if [[ -z $command ]]; then
    if [[ $prev == --ca ]]; then COMPREPLY=(); return; fi
    if [[ $cur == -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W ${shellWord(root.options.join(" "))} -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -W ${shellWord(root.subcommands.map((each) => each.name).join(" "))} -- "$cur")
    fi
    return
  fi
  local rest=$((i + 1)) options="" valued="" subcommands="" jobs="" flows="" argv=""
  if ((rest < COMP_CWORD)) && [[ \${COMP_WORDS[rest]} != -* ]]; then sub=\${COMP_WORDS[rest]}; fi
  case $command in
${cases}
  esac
  # After \`--\` comes a command line: a command's name, then the shell's own (file) completion.
  if [[ -n $argv ]]; then
    for ((i = rest; i < COMP_CWORD; i++)); do
      if [[ \${COMP_WORDS[i]} == -- ]]; then
        COMPREPLY=()
        if ((i + 1 == COMP_CWORD)); then mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u); fi
        return
      fi
    done
  fi
  # The value of an option (a file, a number, a host): the shell's own completion.
  if [[ " $valued " == *" $prev "* ]]; then COMPREPLY=(); return; fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
  elif [[ -n $subcommands && -z $sub ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subcommands" -- "$cur")
  elif [[ -n $jobs ]]; then
    # Each id as it came, kept when it starts with what is typed: never expanded (compgen -W would).
    local asked=() id
    [[ $jobs == all ]] && asked+=(--all)
    [[ -n $flows ]] && asked+=(--workflows)
    COMPREPLY=()
    while IFS= read -r id; do
      if [[ $id == "$cur"* ]]; then COMPREPLY+=("$id"); fi
    done < <(_steward_job_ids "\${asked[@]}")
  else
    COMPREPLY=()
  fi
}

complete -o default -F _steward steward
`;
}

function fishScript(root: CommandWords): string {
  const names = root.subcommands.map((each) => each.name).join(" ");
  const lines = [
    "# steward completion for fish: steward completion fish | source",
    "# Job ids (steward ps [--all] --json), then with --workflows workflow ids (flow-N): only words of",
    "# the characters ids are made of; a command substitution's lines are never expanded by fish.",
    "function __steward_job_ids",
    "  command -q steward; or return",
    "  set -l run steward",
    "  command -q timeout; and set run timeout 3 steward",
    "  set -l all",
    "  contains -- --all $argv; and set all --all",
    "  set -l listed (command $run ps $all --json 2>/dev/null); or return",
    `  string replace -rf '^    "id": "([A-Za-z0-9._-]+)".*' '$1' -- $listed`,
    "  contains -- --workflows $argv; or return",
    `  command $run ps --workflows $all --json 2>/dev/null | string replace -rf '^    "workflow": "(flow-[1-9][0-9]*)".*' '$1'`,
    "end",
    "complete -c steward -f",
    ...fishOptions(root, `not __fish_seen_subcommand_from ${names}`),
  ];
  for (const command of root.subcommands) {
    lines.push(
      `complete -c steward -n ${shellWord(`not __fish_seen_subcommand_from ${names}`)} -a ${command.name} -d ${shellWord(command.description)}`,
    );
    const inCommand = `__fish_seen_subcommand_from ${command.name}`;
    if (command.subcommands.length > 0) {
      const subs = command.subcommands.map((each) => each.name).join(" ");
      for (const sub of command.subcommands) {
        lines.push(
          `complete -c steward -n ${shellWord(`${inCommand}; and not __fish_seen_subcommand_from ${subs}`)} -a ${sub.name} -d ${shellWord(sub.description)}`,
        );
        lines.push(...fishOptions(sub, `${inCommand}; and __fish_seen_subcommand_from ${sub.name}`));
      }
    }
    lines.push(...fishOptions(command, inCommand));
    if (command.argv) {
      // After `--`: a command's name, then files.
      lines.push(
        `complete -c steward -n ${shellWord(`${inCommand}; and test (commandline -opc)[-1] = --`)} -a ${shellWord("(__fish_complete_command)")}`,
        `complete -c steward -n ${shellWord(`${inCommand}; and contains -- -- (commandline -opc); and not test (commandline -opc)[-1] = --`)} -F`,
      );
    }
    if (command.jobIds)
      lines.push(
        `complete -c steward -n ${shellWord(inCommand)} -a ${shellWord(`(__steward_job_ids${command.jobIds === "all" ? " --all" : ""}${command.workflowIds ? " --workflows" : ""})`)}`,
      );
  }
  return `${lines.join("\n")}\n`;
}

function fishOptions(command: CommandWords, condition: string): string[] {
  return command.options
    .filter((option) => option.startsWith("--"))
    .map((option) => {
      const valued = command.valued.includes(option) ? " -r -F" : "";
      return `complete -c steward -n ${shellWord(condition)} -l ${option.slice(2)}${valued}`;
    });
}

/** A word in single quotes for bash, zsh and fish alike. */
function shellWord(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

// Other names for the job file's keys, with what to suggest for each.

/**
 * Names users write for a key the job file spells otherwise, by the mapping they are in ("" the
 * top), with what to suggest: `unknown key (did you mean timeLimitSeconds?)`. Near misses
 * (`comand`, `time_limit_seconds`, `backoff`) need none: key-suggestion.ts finds them.
 */
export const JOB_FILE_KEY_ALIASES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "": {
    timeLimit: "timeLimitSeconds",
    walltime: "timeLimitSeconds",
    timeout: "timeLimitSeconds",
    cpus: "resources.cpus",
    memory: "resources.memoryMb",
    mem: "resources.memoryMb",
    memoryMb: "resources.memoryMb",
    gpus: "resources.gpus",
    retries: "retry.maxAttempts",
    maxAttempts: "retry.maxAttempts",
    environment: "env",
    depends: "dependsOn",
    dependencies: "dependsOn",
    after: "dependsOn",
    cmd: "command",
    args: "command",
    script: "command",
    run: "command",
    files: "inputs",
    image: "container.image",
  },
  container: { volumes: "mounts", mount: "mounts", net: "network", entryPoint: "entrypoint" },
  resources: { memory: "memoryMb", mem: "memoryMb", cpu: "cpus", gpu: "gpus" },
  retry: { attempts: "maxAttempts", retries: "maxAttempts", backoff: "backoffSeconds" },
  checkpoint: { interval: "intervalSeconds", grace: "graceSeconds" },
};

// What a job of the agent's own account inherits from the agent: the agent's environment less
// Steward's own settings. Every variable named STEWARD_* in the agent's environment configures a
// Steward program (the agent's join token, the client's token and URL, the compiled launcher's
// cache, Node's compile cache, the log level, the launcher's kind): none of it is the job's. The
// STEWARD_* variables a job sees are the ones the agent sets for it (job-script.ts) and its own
// `env`. A job that talks to Steward itself gives STEWARD_URL (and a token) in its `env`.

/** The prefix of Steward's own settings, which a job does not inherit. */
export const STEWARD_SETTING_PREFIX = "STEWARD_";

/** Node's compile cache, turned on by bin/steward for Steward's own processes. */
const NODE_COMPILE_CACHE = "NODE_COMPILE_CACHE";

/** True for a variable of the agent's environment that a job does not inherit. */
export function isStewardSetting(name: string): boolean {
  return name.startsWith(STEWARD_SETTING_PREFIX) || name === NODE_COMPILE_CACHE;
}

/** The agent's environment as a job of its account inherits it (the launcher is started with it). */
export function inheritedEnvironment(agentEnvironment: NodeJS.ProcessEnv): Record<string, string> {
  const inherited: Record<string, string> = {};
  for (const [name, value] of Object.entries(agentEnvironment))
    if (value !== undefined && !isStewardSetting(name)) inherited[name] = value;
  return inherited;
}

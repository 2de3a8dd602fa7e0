// Why an attempt ended, where its outcome alone does not say: what the rules of task outcomes
// (task-outcome.ts), gangs (gang.ts) and the events' data (events.ts) all name.

/**
 * Why an attempt ended `lost`: its host (lease expired, agent restarted without it), or a system
 * failure that is not the host's: inputs or outputs that could not be staged (an input the server
 * or a URL's server did not give in all its tries, a URL input whose content is not of its
 * sha256: the reason names the URL), a start message that never reached the agent. Only host losses count toward the poison limit (guarantee 5).
 */
export type LossCause = "host" | "staging" | "undelivered";

/** Why an attempt ended, where the outcome alone does not say: a loss's cause, or `oom` for a failure by the memory limit. */
export type EndCause = LossCause | "oom";

// What an agent reports: a command resolves once the report's changes are durable, and only then
// is the report acknowledged. Reports that arrive together are applied together (attemptReports).

import { type NewToken, newTokenOf, presentedToken } from "../../../common/model/tokens.ts";
import type { EndedEvent, HelloMessage, StartedEvent } from "../../../common/protocol/messages.ts";
import { ConflictError } from "../errors.ts";
import { type AttemptRef, attachHost, attemptReports } from "../handlers/agent-reports.ts";
import { issueHostCredential } from "../handlers/tokens.ts";
import type { AgentCommands } from "../ports.ts";
import type { CommandContext } from "./context.ts";

export function agentCommands({ reactor }: CommandContext): AgentCommands {
  return {
    /**
     * An agent said hello. Returns the attempts it must kill (no longer live) and, when it joined
     * with a join token (`credential` given), the text of the host credential it gets, durable
     * before it is answered: the one the agent proposed in its hello (made and kept in its work
     * folder before it said hello, so that a server that commits it and dies before its welcome
     * reaches the agent leaves the agent holding it), or a new one when it proposed none or one
     * whose id is taken.
     */
    async attachHost(
      message: HelloMessage,
      credential?: { parent: string | null },
    ): Promise<{ kill: AttemptRef[]; credential?: string }> {
      const proposed = credential && message.credential ? presentedToken(message.credential, "host") : null;
      let token: NewToken | undefined;
      const kill = await reactor.run((step) => {
        if (credential) {
          token = proposed && !step.state.tokens.get(proposed.id) ? proposed : newTokenOf("host");
          issueHostCredential(step, message.name, message.pool, credential.parent, token);
        }
        // Let in by its credential, which was revoked (the host removed) before this step ran: the
        // agent says hello again and is refused then.
        else if (message.credential && !step.state.tokens.credentialOf(message.name, step.now))
          throw new ConflictError(`the host credential of ${message.name} was revoked meanwhile`);
        return attachHost(step, message);
      });
      return { kill, credential: token?.text };
    },

    /** One started report (as attemptReports applies it alone); rejects with its error. */
    async attemptStarted(hostName, jobId, taskIndex, attempt, coordinatorPort, rank) {
      const report: StartedEvent = {
        kind: "started",
        jobId,
        taskIndex,
        attempt,
        pid: 0,
        ...(rank !== undefined ? { rank } : {}),
        ...(coordinatorPort !== undefined ? { coordinatorPort } : {}),
      };
      const [error] = await applyReports(hostName, [report]);
      if (error !== null) throw error;
    },

    /** One ended report (as attemptReports applies it alone); rejects with its error. */
    async attemptEnded(hostName: string, report: EndedEvent): Promise<void> {
      const [error] = await applyReports(hostName, [report]);
      if (error !== null) throw error;
    },

    attemptReports: applyReports,
  };

  /**
   * A host's started and ended reports, applied in their order as one step (one commit): what
   * each would do alone, a report of an attempt the host no longer runs changing nothing.
   * Resolves once durable with each report's error (null when applied): a report whose handler
   * throws has changed nothing (its writes are taken back), so the others stand.
   */
  function applyReports(
    hostName: string,
    reports: readonly (StartedEvent | EndedEvent)[],
  ): Promise<unknown[]> {
    return reactor.run((step) => attemptReports(step, hostName, reports));
  }
}

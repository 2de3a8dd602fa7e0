// Whether an agent's hello is let in, and whether it gets a new host credential. A host that
// joined once holds a credential (given in its welcome, kept 0600 in its work folder) and presents
// it from then on; a join token alone no longer speaks for that host name, so a leaked join token
// cannot take over a known host. Revoking a join token revokes the credentials given under it.

import { HOST_CREDENTIAL_FILE } from "../../common/protocol/messages.ts";
import type { Credentials } from "../api/auth.ts";
import { joinTokenScope } from "../pools/pool-token.ts";
import type { TokenRegistry } from "../state/token-registry.ts";

export interface AgentHello {
  name: string;
  pool: string;
  /** The join token (may be empty when a credential is given). */
  token: string;
  credential?: string;
}

export type Admission =
  /** Let in; `issue` says to give it a new credential under that join token (null: the server's or a pool's). */
  { admitted: true; issue: { parent: string | null } | null } | { admitted: false; reason: string };

/** What admitting an agent reads of the tokens: a presented one's match, and a host's credential. */
export interface AgentCredentials extends Omit<Credentials, "tokens"> {
  tokens: Pick<TokenRegistry, "match" | "credentialOf">;
}

export function admitAgent(hello: AgentHello, credentials: AgentCredentials): Admission {
  const { tokens, now } = credentials;
  if (hello.credential) {
    const found = tokens.match(hello.credential, "host", now);
    if (found !== null) {
      if ("refused" in found)
        return {
          admitted: false,
          reason:
            `${found.refused}; to join again as ${hello.name}, delete ${HOST_CREDENTIAL_FILE} from the agent's ` +
            "work folder and start it with a join token",
        };
      if (found.subject !== hello.name)
        return {
          admitted: false,
          reason: `this host credential is for host ${found.subject}, not ${hello.name}`,
        };
      return { admitted: true, issue: null };
    }
    // A credential this server does not know (its store was replaced): the join token decides.
  }
  const joined = joinScope(hello, credentials);
  if ("reason" in joined) return { admitted: false, reason: joined.reason };
  const existing = tokens.credentialOf(hello.name, now);
  if (existing)
    return {
      admitted: false,
      reason:
        `host ${hello.name} has joined before and must present its host credential (kept in its work folder); ` +
        `a join token alone cannot take over a known host. An admin may revoke the old credential ` +
        `(steward token revoke ${existing.id}) to let another machine join under this name`,
    };
  return { admitted: true, issue: { parent: joined.parent } };
}

/** The join token's verdict: the stored join token it is (parent), or null for the server's or a pool's. */
function joinScope(
  hello: AgentHello,
  credentials: AgentCredentials,
): { parent: string | null } | { reason: string } {
  const scope = joinTokenScope(credentials.joinToken, hello.token);
  if (scope !== null) {
    if (scope !== "any" && scope.pool !== hello.pool)
      return { reason: `the join token is for pool ${scope.pool}, not ${hello.pool}` };
    return { parent: null };
  }
  const stored = credentials.tokens.match(hello.token, "join", credentials.now);
  if (stored === null) return { reason: "bad join token" };
  if ("refused" in stored) return { reason: stored.refused };
  if (stored.pool !== null && stored.pool !== hello.pool)
    return { reason: `the join token is for pool ${stored.pool}, not ${hello.pool}` };
  return { parent: stored.id };
}

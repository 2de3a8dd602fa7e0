// Tokens given out and revoked, one command each, durable when they resolve.

import type { TokenKind, TokenRecord } from "../../../common/model/records.ts";
import { createToken, revokeToken, type TokenRequest } from "../handlers/tokens.ts";
import type { TokenCommands } from "../ports.ts";
import type { CommandContext } from "./context.ts";

export function tokenCommands({ reactor }: CommandContext): TokenCommands {
  return {
    /** Stores a new token (its hash). */
    create(request: TokenRequest): Promise<TokenRecord> {
      return reactor.run((step) => createToken(step, request));
    },

    /** Revokes a token of one of `kinds` (a join token with its hosts' credentials; their agents are disconnected). */
    revoke(id: string, kinds: readonly TokenKind[]): Promise<TokenRecord> {
      return reactor.run((step) => revokeToken(step, id, kinds));
    },
  };
}

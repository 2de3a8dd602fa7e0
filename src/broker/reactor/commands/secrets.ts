// Users' secrets set and removed, one command each, durable when they resolve.

import type { SecretListing } from "../../../common/model/records.ts";
import type { SecretValue } from "../../../common/model/secret-value.ts";
import { removeSecret, type SecretSet, setSecret } from "../handlers/secrets.ts";
import type { SecretCommands } from "../ports.ts";
import type { CommandContext } from "./context.ts";

export function secretCommands({ reactor }: CommandContext): SecretCommands {
  return {
    set(owner: string, name: string, value: SecretValue): Promise<SecretSet> {
      return reactor.run((step) => setSecret(step, owner, name, value));
    },

    remove(owner: string, name: string): Promise<SecretListing> {
      return reactor.run((step) => removeSecret(step, owner, name));
    },
  };
}

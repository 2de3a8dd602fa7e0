// The admin's requests on hosts, one command each, durable when they resolve.

import type { HostRecord } from "../../../common/model/records.ts";
import { drainHost, removeHost, undrainHost } from "../handlers/control.ts";
import type { HostCommands } from "../ports.ts";
import type { CommandContext } from "./context.ts";

export function hostCommands({ reactor }: CommandContext): HostCommands {
  return {
    /** A host takes no new work; what runs there runs on. */
    drain(name: string): Promise<HostRecord> {
      return reactor.run((step) => drainHost(step, name));
    },

    /** A draining host takes work again (a ready one is answered as it is; a lost one: ConflictError). */
    undrain(name: string): Promise<HostRecord> {
      return reactor.run((step) => undrainHost(step, name));
    },

    /** Forgets a host whose agent is not attached, revoking its host credentials (their ids answered). */
    removeHost(name: string, by?: string): Promise<string[]> {
      return reactor.run((step) => removeHost(step, name, by));
    },
  };
}

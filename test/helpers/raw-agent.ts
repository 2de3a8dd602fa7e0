// An agent's WebSocket driven by hand: a host that joins and then says only what a test makes it
// say (the security and fuzz tests' hostile or stand-in hosts).

import { WebSocket } from "ws";
import type { HostFacts } from "../../src/common/model/host-facts.ts";
import { AGENT_CONNECT_PATH, type ServerMessage } from "../../src/common/protocol/messages.ts";
import { facts } from "./core-harness.ts";

export interface RawHello {
  name: string;
  token: string;
  credential?: string;
  pool?: string;
  slots?: number;
  labels?: Record<string, string>;
  /** Say that this agent reads batch frames (hello's `batches`). */
  batches?: boolean;
  /** Facts over the usual ones (a shared folder, features). */
  facts?: Partial<HostFacts>;
}

/** Opens an agent connection and says hello; resolves with the server's first answer and the socket. */
export async function rawHello(
  serverUrl: string,
  fields: RawHello,
): Promise<{ ws: WebSocket; answer: ServerMessage }> {
  const ws = new WebSocket(`${serverUrl.replace(/^http/, "ws")}${AGENT_CONNECT_PATH}`);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const answer = new Promise<ServerMessage>((resolve) =>
    ws.once("message", (data) => resolve(JSON.parse(String(data)) as ServerMessage)),
  );
  const pool = fields.pool ?? "default";
  const labels = fields.labels ?? {};
  ws.send(
    JSON.stringify({
      type: "hello",
      v: 1,
      name: fields.name,
      token: fields.token,
      ...(fields.credential ? { credential: fields.credential } : {}),
      pool,
      slots: fields.slots ?? 1,
      labels,
      facts: facts(fields.name, { ...fields.facts, pool, labels }),
      attempts: [],
      ...(fields.batches ? { batches: true } : {}),
    }),
  );
  return { ws, answer: await answer };
}

/** The host credential in a welcome (empty when the answer was not one). */
export function credentialOf(answer: ServerMessage): string {
  return answer.type === "welcome" ? (answer.credential ?? "") : "";
}

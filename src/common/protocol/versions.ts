// The versions two Steward programs compare before they talk: the agent protocol's (in an agent's
// hello and the server's welcome, messages.ts), the HTTP API's (the /api/v1 of every path, and a
// header each client sends and each answer carries), and the release (package.json's version),
// named beside them so that a refusal says which programs to match. A peer that names no version is
// taken to speak the first one: releases before these checks sent none.

import { readFileSync } from "node:fs";

/** The HTTP API's version: the N of /api/vN. */
export const API_VERSION = 1;

/** The header a client sends with its API version, and every answer of the server carries. */
export const API_VERSION_HEADER = "steward-api-version";

/** The header naming the sender's release (a client's, or the server's on its answers). */
export const RELEASE_HEADER = "steward-release";

let release: string | null = null;

/** package.json's version: the one place the release is written. */
export function stewardRelease(): string {
  if (release === null) {
    const file = new URL("../../../package.json", import.meta.url);
    release = (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
  }
  return release;
}

/** A program speaking some version of a protocol; `release` when it said which. */
export interface Speaker {
  version: number | string;
  release?: string | undefined;
}

function described(speaker: Speaker): string {
  return speaker.release
    ? `version ${speaker.version} (steward ${speaker.release})`
    : `version ${speaker.version}`;
}

/**
 * The API version a client's header names, or null for none (curl, or a release before the header)
 * or one that names this server's own version.
 */
export function foreignApiVersion(header: string | string[] | undefined | null): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value === null || value.trim() === "") return null;
  return value.trim() === String(API_VERSION) ? null : value.trim();
}

/** The API version of a path under /api/vN other than this server's, or null. */
export function foreignApiPathVersion(path: string): string | null {
  const match = /^\/api\/v(\d+)(?:\/|$)/.exec(path);
  return match && match[1] !== String(API_VERSION) ? match[1] : null;
}

/** Why the server refuses a client of another API version. */
export function clientRefusal(client: Speaker, server: Speaker): string {
  return `this client speaks Steward API ${described(client)} and this server speaks API ${described(server)}: use a client of the server's release`;
}

/** Why a client refuses a server of another API version. */
export function serverRefusal(url: string, server: Speaker, client: Speaker): string {
  return `the Steward server at ${url} speaks API ${described(server)} and this client speaks API ${described(client)}: use a client of the server's release`;
}

/** Why the server refuses an agent of another protocol version (its reject's reason). */
export function agentRefusal(agent: Speaker, server: Speaker): string {
  return `this agent speaks agent protocol ${described(agent)} and this server speaks ${described(server)}: run an agent of the server's release`;
}

/** Why an agent leaves a server of another protocol version. */
export function agentLeavesServer(url: string, server: Speaker, agent: Speaker): string {
  return `the Steward server at ${url} speaks agent protocol ${described(server)} and this agent speaks ${described(agent)}: run an agent of the server's release`;
}

// The URL other hosts use to reach this server (`--advertise-url`): what a standby names in its
// redirects, what the leader record in the store holds, what pilots get as `--server` and what
// /healthz calls the leader. The listen address is not it when the server listens on a wildcard
// address (0.0.0.0, ::): then the machine's host name is the best guess, and the log says so.

import { lookup, lookupService } from "node:dns/promises";
import { hostname, networkInterfaces } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

/** How long the machine's own name may take to resolve at the start. */
const NAME_LOOKUP_TIMEOUT_MS = 3_000;

/** A bad `--advertise-url`; the message names what is wrong. */
export class AdvertiseUrlError extends Error {}

/** Addresses that mean "every interface of this machine". */
export function isWildcardAddress(host: string): boolean {
  return ["", "0.0.0.0", "::", "[::]", "::0", "0:0:0:0:0:0:0:0"].includes(host.trim().toLowerCase());
}

/** Names and addresses that reach only this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.toLowerCase().replace(/^\[|\]$/g, "");
  return (
    bare === "localhost" ||
    bare.endsWith(".localhost") ||
    bare === "localhost.localdomain" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare) ||
    bare === "::1" ||
    bare === "0:0:0:0:0:0:0:1" ||
    bare === "::ffff:127.0.0.1"
  );
}

/** A host for a URL: an IPv6 address goes in brackets. */
function urlHost(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/**
 * `--advertise-url` checked: an http or https URL with a host and nothing after the port (the API's
 * paths are appended to it). Its scheme must be the server's own: https with --tls-cert, http
 * without. A TLS proxy in front of a plain-HTTP broker is not a supported set-up, and a mismatch is
 * far more often a slip that would break every redirect and every pilot. A loopback host is refused
 * unless the server listens on loopback only: other hosts would reach themselves, not this server.
 */
export function parseAdvertiseUrl(text: string, options: { tls: boolean; listenHost: string }): string {
  const flag = "--advertise-url";
  const url = URL.parse(text.trim());
  if (url === null)
    throw new AdvertiseUrlError(`${flag} ${text}: not a URL (e.g. http://broker1.example.org:4780)`);
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new AdvertiseUrlError(`${flag} ${text}: needs an http:// or https:// URL`);
  const scheme = options.tls ? "https" : "http";
  if (url.protocol !== `${scheme}:`)
    throw new AdvertiseUrlError(
      `${flag} ${text}: the server serves ${scheme.toUpperCase()} (${options.tls ? "with" : "without"} --tls-cert), so the URL must start with ${scheme}://`,
    );
  if (!url.hostname) throw new AdvertiseUrlError(`${flag} ${text}: names no host`);
  if (url.username || url.password)
    throw new AdvertiseUrlError(`${flag} ${text}: must not carry credentials`);
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash)
    throw new AdvertiseUrlError(
      `${flag} ${text}: must not have a path, query or fragment (scheme, host and port only)`,
    );
  if (isLoopbackHost(url.hostname) && !isLoopbackHost(options.listenHost))
    throw new AdvertiseUrlError(
      `${flag} ${text}: a loopback address reaches only this machine, but the server listens on ${options.listenHost}: name an address or host name other hosts reach it at`,
    );
  // URL drops a scheme's default port; the origin keeps the form the clients compare with.
  return url.origin;
}

/** What the default advertised URL is chosen from: the listen address and what the machine says of itself. */
export interface AdvertiseFacts {
  scheme: "http" | "https";
  listenHost: string;
  port: number;
  /** os.hostname(). */
  hostName: string;
  /** The host name's fully qualified form when it resolves (null when it does not). */
  fullName: string | null;
  /** Non-loopback addresses of this machine's interfaces, IPv4 first (a fallback for a host name that is loopback). */
  addresses: readonly string[];
}

export interface AdvertiseChoice {
  url: string;
  /** Set when the choice is a guess (a wildcard listen address): the server logs it. */
  warning: string | null;
}

/**
 * The advertised URL when `--advertise-url` is not given. A specific listen address is the answer
 * (loopback included: a server on loopback is reachable on this machine only anyway). A wildcard
 * one is not an address anyone can connect to: the host name is used instead, fully qualified when
 * it resolves; a host name that is a loopback name (localhost) gives way to the first non-loopback
 * interface address, so that no other host is sent to itself.
 */
export function defaultAdvertiseUrl(facts: AdvertiseFacts): AdvertiseChoice {
  const { scheme, listenHost, port } = facts;
  if (!isWildcardAddress(listenHost))
    return { url: `${scheme}://${urlHost(listenHost)}:${port}`, warning: null };
  const name = facts.fullName && !isLoopbackHost(facts.fullName) ? facts.fullName : facts.hostName.trim();
  const advice = "set --advertise-url to the URL other hosts reach this server at";
  if (name && !isLoopbackHost(name)) {
    const url = `${scheme}://${urlHost(name)}:${port}`;
    const how =
      facts.fullName === null
        ? "its host name, which does not resolve here"
        : name.includes(".")
          ? "its fully qualified host name"
          : "its host name";
    return {
      url,
      warning: `listening on ${listenHost}: advertising ${url}, from ${how}, in redirects, leader records and pilots' --server; ${advice}`,
    };
  }
  const address = facts.addresses[0];
  if (address) {
    const url = `${scheme}://${urlHost(address)}:${port}`;
    return {
      url,
      warning: `listening on ${listenHost}: the host name "${name}" is a loopback name, so advertising ${url} (the first interface address) in redirects, leader records and pilots' --server; ${advice}`,
    };
  }
  const url = `${scheme}://127.0.0.1:${port}`;
  return {
    url,
    warning: `listening on ${listenHost}, but this machine has no host name or address other hosts could use: advertising ${url}, which works on this machine only; ${advice}`,
  };
}

/** What this machine says of itself: host name, its fully qualified form, interface addresses. */
export async function machineFacts(): Promise<Pick<AdvertiseFacts, "hostName" | "fullName" | "addresses">> {
  const hostName = hostname();
  let fullName: string | null = null;
  try {
    // getaddrinfo, then getnameinfo on the address: the resolver's canonical name, as `hostname -f`.
    // A resolver that does not answer does not hold the start up for long: the name is a guess anyway.
    const canonical = await Promise.race([
      lookup(hostName).then(({ address }) => lookupService(address, 0)),
      sleep(NAME_LOOKUP_TIMEOUT_MS, undefined, { ref: false }).then(() => {
        throw new Error("no answer");
      }),
    ]);
    const short = hostName.split(".")[0];
    fullName =
      canonical.hostname.split(".")[0] === short && canonical.hostname.includes(".")
        ? canonical.hostname
        : hostName;
  } catch {
    fullName = null;
  }
  const addresses: string[] = [];
  for (const list of Object.values(networkInterfaces()))
    for (const entry of list ?? [])
      if (!entry.internal && !entry.address.startsWith("fe80:")) addresses.push(entry.address);
  addresses.sort((a, b) => Number(a.includes(":")) - Number(b.includes(":")));
  return { hostName, fullName, addresses };
}

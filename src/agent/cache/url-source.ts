// A URL input's server as a download source (download.ts): a GET of the URL itself, not through
// the Steward server, redirects followed. Credentials in the URL (`https://user:password@host/...`)
// go as Basic authorization, which fetch does not take in the URL; messages name the URL without
// them, nor its query (shownUrl).

import type { DownloadSource } from "./download.ts";
import { shownUrl } from "./download.ts";

/**
 * The URL without its credentials, and the Basic authorization they stand for (none for a URL
 * without): what a request to it sends, as fetch takes no credentials in the URL.
 */
export function withoutCredentials(url: string): { target: string; headers: Record<string, string> } {
  const parsed = new URL(url);
  const headers: Record<string, string> = {};
  if (parsed.username !== "" || parsed.password !== "") {
    const user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    parsed.username = "";
    parsed.password = "";
  }
  return { target: parsed.toString(), headers };
}

export function urlSource(url: string): DownloadSource {
  const { target, headers } = withoutCredentials(url);
  return {
    name: shownUrl(url),
    open: (extra, signal) => fetch(target, { headers: { ...headers, ...extra }, signal, redirect: "follow" }),
  };
}

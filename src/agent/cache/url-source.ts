// A URL input's server as a download source (download.ts): a GET of the URL itself, not through
// the Steward server, redirects followed. Credentials in the URL (`https://user:password@host/...`)
// go as Basic authorization, which fetch does not take in the URL; messages name the URL without
// them, nor its query (shownUrl).

import type { DownloadSource } from "./download.ts";
import { shownUrl } from "./download.ts";

export function urlSource(url: string): DownloadSource {
  const parsed = new URL(url);
  const headers: Record<string, string> = {};
  if (parsed.username !== "" || parsed.password !== "") {
    const user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    parsed.username = "";
    parsed.password = "";
  }
  const target = parsed.toString();
  return {
    name: shownUrl(url),
    open: (extra, signal) => fetch(target, { headers: { ...headers, ...extra }, signal, redirect: "follow" }),
  };
}

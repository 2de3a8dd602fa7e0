// Whether a server's URL is on this machine's loopback: 127.0.0.0/8, ::1 or localhost. The local
// admin token (./.steward/admin-token, left by `steward up`) goes to such a server only.

/** Whether `url`'s host is a loopback address or `localhost`; false for a URL that does not parse. */
export function isLoopbackUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host === "localhost" || host === "localhost." || host === "[::1]") return true;
  // The URL parser has made every IPv4 form (127.1, 0x7f.1) dotted-decimal.
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

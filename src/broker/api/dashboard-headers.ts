// The headers every dashboard response carries: a Content-Security-Policy that lets the page run
// its own modules and its import map (by its hash) and nothing else (no inline script, no other
// origin, no plugin, no frame of it elsewhere), and the two older headers browsers still heed.

import { createHash } from "node:crypto";

/** The `<script type="importmap">`'s text in the page, or null when it has none. */
export function importMapText(html: string): string | null {
  const match = /<script type="importmap">([\s\S]*?)<\/script>/.exec(html);
  return match ? match[1] : null;
}

/** The policy for a page whose only inline script is `inlineScript` (its import map), allowed by its hash. */
export function contentSecurityPolicy(inlineScript: string | null): string {
  const hash =
    inlineScript === null ? "" : ` 'sha256-${createHash("sha256").update(inlineScript).digest("base64")}'`;
  return [
    "default-src 'none'",
    `script-src 'self'${hash}`,
    // Preact sets the legend swatches' colours through the CSSOM (element.style), which a policy
    // without 'unsafe-inline' allows; no inline <style> or style="" markup is needed.
    "style-src 'self'",
    // The page's icon is an empty data: URL.
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The dashboard's security headers for the page of `html`. */
export function dashboardHeaders(html: string): Record<string, string> {
  return {
    "content-security-policy": contentSecurityPolicy(importMapText(html)),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
  };
}

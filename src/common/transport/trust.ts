// A private certificate authority for the CLI, agents and the SDK (`--ca FILE` or STEWARD_CA):
// its certificates are added to the process's default trust, which fetch and WebSocket use.

import { readFileSync } from "node:fs";
import tls from "node:tls";

/** Certificate problems a TLS client reports; a message for them says how to give the authority. */
export const CERTIFICATE_ERROR_CODES: ReadonlySet<string> = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** The PEM certificates in a file; throws naming the file when it holds none. */
function readCertificates(path: string): string[] {
  const text = readFileSync(path, "utf8");
  const found = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (found.length === 0) throw new Error(`${path} holds no PEM certificate`);
  return found;
}

/** Trusts the authorities in `path` beside the system's, for every TLS connection this process makes. */
export function trustAuthority(path: string): void {
  tls.setDefaultCACertificates([...tls.getCACertificates("default"), ...readCertificates(path)]);
}

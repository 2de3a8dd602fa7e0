// A private certificate authority and certificates it signs, made with openssl for the TLS tests:
// the authority's key stays in the test's folder, each certificate names the hosts it is for
// (DNS names and IP addresses in its subjectAltName).

import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Null when openssl runs here, otherwise why not. */
export async function opensslUnavailable(): Promise<string | null> {
  try {
    await run("openssl", ["version"]);
    return null;
  } catch (error) {
    return `no openssl (${(error as Error).message})`;
  }
}

/** Makes `ca.crt` and `ca.key` in `dir`, valid for two days; answers the certificate's path. */
export async function makeAuthority(dir: string, name = "Steward test authority"): Promise<string> {
  await run(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "2",
      "-subj",
      `/CN=${name}`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=keyCertSign",
    ],
    { cwd: dir },
  );
  return join(dir, "ca.crt");
}

/**
 * Makes `FILE.crt` and `FILE.key` in `dir`, signed by the authority there (makeAuthority), for
 * the names and addresses given; the first name is also its common name.
 */
export async function makeCertificate(
  dir: string,
  file: string,
  hosts: { dns?: string[]; ip?: string[] },
): Promise<{ cert: string; key: string }> {
  const names = [
    ...(hosts.dns ?? []).map((name) => `DNS:${name}`),
    ...(hosts.ip ?? []).map((ip) => `IP:${ip}`),
  ];
  if (names.length === 0) throw new Error("a certificate needs a name or an address");
  const commonName = hosts.dns?.[0] ?? hosts.ip?.[0];
  await run(
    "openssl",
    [
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      `${file}.key`,
      "-out",
      `${file}.csr`,
      "-subj",
      `/CN=${commonName}`,
    ],
    { cwd: dir },
  );
  writeFileSync(join(dir, `${file}.ext`), `subjectAltName=${names.join(",")}\n`);
  await run(
    "openssl",
    [
      "x509",
      "-req",
      "-in",
      `${file}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${file}.crt`,
      "-days",
      "2",
      "-extfile",
      `${file}.ext`,
    ],
    { cwd: dir },
  );
  return { cert: join(dir, `${file}.crt`), key: join(dir, `${file}.key`) };
}

// Secrets in printed settings: `steward config` and the server's start lines hide the password of
// every URL (each one of a comma-separated list, not only the first) and the value of a query
// parameter that names a secret (postgres://u@db/x?password=...).

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { redactSecrets } from "../../src/daemons/redact-secrets.ts";
import { dropSchema, freshSchema, postgresUnreachable, urlWithSchema } from "../helpers/postgres.ts";
import { cleanup, cli, freePort, STEWARD, tempDir, waitFor } from "../helpers/steward.ts";

const dir = tempDir("steward-redaction-");
afterAll(() => cleanup(dir));

describe("redactSecrets", () => {
  it.each([
    ["postgres://steward:pw@db/grid", "postgres://steward:<redacted>@db/grid"],
    ["postgres://steward@db/grid?password=pw", "postgres://steward@db/grid?password=<redacted>"],
    [
      "postgres://u@db/x?schema=s&password=p%40w&sslmode=require",
      "postgres://u@db/x?schema=s&password=<redacted>&sslmode=require",
    ],
    [
      "postgres://u@db/x?sslpassword=k&PASSWORD=p",
      "postgres://u@db/x?sslpassword=<redacted>&PASSWORD=<redacted>",
    ],
    ["http://a:1@h1:4780,http://b:2@h2:4780", "http://a:<redacted>@h1:4780,http://b:<redacted>@h2:4780"],
    ["http://h1:4780,http://u:p@h2:4780", "http://h1:4780,http://u:<redacted>@h2:4780"],
    ["http://h1:4780/?token=t,http://h2:4780", "http://h1:4780/?token=<redacted>,http://h2:4780"],
    ["http://h1:4780,http://h2:4780", "http://h1:4780,http://h2:4780"],
    ["postgres://db:5432/grid?schema=steward", "postgres://db:5432/grid?schema=steward"],
    ["/etc/steward/pools.yaml", "/etc/steward/pools.yaml"],
  ])("%s", (text, shown) => {
    expect(redactSecrets(text)).toBe(shown);
  });
});

describe("steward config", () => {
  it("redacts a password in the store URL's query string", async () => {
    const result = await cli(null, ["config", "--server"], {
      env: { STEWARD_STORE: "postgres://steward@db/grid?schema=s&password=sekrit-store" },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(
      "store: postgres://steward@db/grid?schema=s&password=<redacted> # from STEWARD_STORE",
    );
    expect(result.stdout).not.toContain("sekrit");
  });

  it("redacts every URL of a list, from a variable and from a file's list", async () => {
    const env = await cli(null, ["config", "--agent"], {
      env: { STEWARD_SERVER: "http://a:sekrit-one@h1:4780,http://b:sekrit-two@h2:4780" },
    });
    expect(env.code, env.stderr).toBe(0);
    expect(env.stdout).toContain("server: http://a:<redacted>@h1:4780,http://b:<redacted>@h2:4780");
    expect(env.stdout).not.toContain("sekrit");
    const file = join(dir, "agent.yaml");
    writeFileSync(file, "server: http://h1:4780\nlabel: [a=http://u:sekrit-label@x, b=c]\n", { mode: 0o600 });
    const listed = await cli(null, ["config", "--agent", "--config", file]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("a=http://u:<redacted>@x");
    expect(listed.stdout).not.toContain("sekrit");
  });
});

const unreachable = await postgresUnreachable();

describe.skipIf(unreachable !== null && process.env.CI !== "true")("the server's start lines", () => {
  it("redact a password in the store URL's query string", async () => {
    const schema = freshSchema("steward_redact");
    const store = `${urlWithSchema(schema)}&password=sekrit-start`;
    const port = await freePort();
    const child = spawn(
      STEWARD,
      ["server", "--data", join(dir, "data"), "--port", String(port), "--store", store],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    try {
      await waitFor("the store line", () => output.includes("  blobs:"), 30_000);
      expect(output).toContain("password=<redacted>");
      expect(output).not.toContain("sekrit");
    } finally {
      child.kill("SIGTERM");
      await new Promise((done) => child.once("exit", done));
      await dropSchema(schema);
    }
  });
});

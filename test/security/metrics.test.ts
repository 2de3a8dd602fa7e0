// /metrics tells how busy the grid is (jobs by state, hosts, submits): it takes a token of any
// role, reader included, unless the server was started with --metrics-open (for a scraper that
// cannot send one). Real `steward server` and `steward up` processes.

import { afterAll, describe, expect, it } from "vitest";
import { api, cleanup, cli, type StewardProcess, startServerProcess, startUp } from "../helpers/steward.ts";

const started: StewardProcess[] = [];

afterAll(async () => {
  for (const each of started) {
    await each.stop();
    cleanup(each.data);
  }
});

async function scrape(url: string, token?: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${url}/metrics`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: response.status, text: await response.text() };
}

describe("/metrics", () => {
  it("answers 401 without a token or with a wrong one, and 200 to every role's token", async () => {
    const server = await startServerProcess();
    started.push(server);
    const missing = await scrape(server.url);
    expect(missing.status).toBe(401);
    expect(missing.text).not.toContain("steward_");
    expect(JSON.parse(missing.text)).toMatchObject({ error: { code: "unauthorized" } });
    expect((await scrape(server.url, "not-a-token")).status).toBe(401);
    // An agent's join token is not an API token.
    expect((await scrape(server.url, server.joinToken)).status).toBe(401);

    const tokens: Record<string, string> = { admin: server.token };
    for (const [user, role] of [
      ["ursula", "user"],
      ["rita", "reader"],
    ]) {
      const result = await cli(server, ["token", "create", "--user", user, "--role", role]);
      expect(result.code, result.stderr).toBe(0);
      tokens[role] = result.stdout.trim();
    }
    for (const [role, token] of Object.entries(tokens)) {
      const scraped = await scrape(server.url, token);
      expect(scraped.status, role).toBe(200);
      expect(scraped.text).toContain("steward_jobs_submitted_total");
    }
    // A revoked token is refused there too.
    const listed = (await api(server, "GET", "/api/v1/tokens")) as { id: string; user: string }[];
    const rita = listed.find((token) => token.user === "rita")!;
    await api(server, "DELETE", `/api/v1/tokens/${rita.id}`);
    expect((await scrape(server.url, tokens.reader)).status).toBe(401);
  });

  it("answers without a token on a server started with --metrics-open", async () => {
    const server = await startServerProcess({ args: ["--metrics-open"] });
    started.push(server);
    const scraped = await scrape(server.url);
    expect(scraped.status).toBe(200);
    expect(scraped.text).toContain("steward_jobs_submitted_total");
    // The API itself still takes a token.
    expect((await fetch(`${server.url}/api/v1/jobs`)).status).toBe(401);
  });

  it("steward up takes --metrics-open too, and requires a token without it", async () => {
    const open = await startUp({ agents: 0, args: ["--metrics-open"] });
    started.push(open);
    expect((await scrape(open.url)).status).toBe(200);
    const closed = await startUp({ agents: 0 });
    started.push(closed);
    expect((await scrape(closed.url)).status).toBe(401);
    expect((await scrape(closed.url, closed.token)).status).toBe(200);
  });

  it("is in the --help of steward server and steward up", async () => {
    for (const command of ["server", "up"]) {
      const help = await cli(null, [command, "--help"]);
      expect(help.stdout, command).toMatch(/--metrics-open\s+serve \/metrics without a token/);
    }
  });
});

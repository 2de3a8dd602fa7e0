// steward token create|list|revoke, steward join-token create|list|revoke, steward whoami.

import { type Command, InvalidArgumentError } from "commander";
import type { NewTokenView, TokenView, WhoAmI } from "../../common/api/tokens.ts";
import { describe } from "../../common/command-line/commands.ts";
import { QOS_NAME } from "../../common/model/qos-name.ts";
import { parseLifetime } from "../../common/model/tokens.ts";
import { ApiClient } from "../client.ts";
import { printJson, shortTime, table } from "../format.ts";

function lifetimeSeconds(text: string): number {
  const ms = parseLifetime(text);
  if (ms === null) throw new InvalidArgumentError("a lifetime such as 30d, 12h, 90m, 45s or 2w");
  return ms / 1000;
}

/** `normal,high` as a list of tier names. */
function qosList(text: string): string[] {
  const names = text.split(",").map((name) => name.trim());
  const bad = names.find((name) => !QOS_NAME.test(name));
  if (bad !== undefined)
    throw new InvalidArgumentError(
      `${bad === "" ? "an empty name" : bad}: tier names are lower-case letters, digits, - and _, comma-separated`,
    );
  return names;
}

function tokenRows(tokens: TokenView[]): string {
  const rows = tokens.map((token) => [
    token.id,
    token.kind,
    token.user,
    token.role ?? token.pool ?? "",
    token.state,
    shortTime(token.createdAt),
    token.expiresAt ? shortTime(token.expiresAt) : "never",
  ]);
  return `${table(["ID", "KIND", "USER", "ROLE/POOL", "STATE", "CREATED", "EXPIRES"], rows)}\n`;
}

function printNew(token: NewTokenView, what: string): void {
  process.stderr.write(
    `${what} ${token.id} made${token.expiresAt ? `, expires ${token.expiresAt}` : ""}; it is shown this once:\n`,
  );
  process.stdout.write(`${token.token}\n`);
}

/**
 * `list` and `revoke` under `parent`, for the tokens at `path` (/api/v1/tokens or
 * /api/v1/join-tokens): their descriptions, what an empty list prints, and the line of a revoke.
 */
function listAndRevoke(
  parent: Command,
  path: string,
  texts: { list: string; none: string; revoke: string; id: string; revoked: (token: TokenView) => string },
): void {
  parent
    .command("list")
    .description(texts.list)
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }) => {
      const tokens = await new ApiClient().json<TokenView[]>("GET", path);
      if (options.json) return printJson(tokens);
      process.stdout.write(tokens.length === 0 ? `${texts.none}\n` : tokenRows(tokens));
    });
  parent
    .command("revoke")
    .description(texts.revoke)
    .argument("<id>", texts.id)
    .option("--json", "print JSON")
    .action(async (id: string, options: { json?: boolean }) => {
      const revoked = await new ApiClient().json<TokenView>("DELETE", `${path}/${encodeURIComponent(id)}`);
      if (options.json) return printJson(revoked);
      process.stdout.write(`${texts.revoked(revoked)}\n`);
    });
}

export function registerTokens(program: Command): void {
  const token = program.command("token").description(describe("token"));
  token
    .command("create")
    .description("make a token for a user; prints it once (only its hash is kept)")
    .requiredOption("--user <name>", "the user it speaks for: the owner of the jobs it submits")
    .option(
      "--role <role>",
      "admin (everything), user (own jobs; sees hosts), reader (reads all, changes nothing)",
      "user",
    )
    .option(
      "--expires <lifetime>",
      "expire after this long (30d, 12h, 90m, 45s, 2w); without it, never",
      lifetimeSeconds,
    )
    .option("--group <group>", "the user's group, for the groups' limits of the server's QoS file (--qos)")
    .option(
      "--qos <list>",
      "the QoS tiers its jobs may ask for, comma-separated (normal,high); without it: normal only (an admin's token: any)",
      qosList,
    )
    .option("--json", "print JSON")
    .action(
      async (options: {
        user: string;
        role: string;
        expires?: number;
        group?: string;
        qos?: string[];
        json?: boolean;
      }) => {
        const made = await new ApiClient().json<NewTokenView>("POST", "/api/v1/tokens", {
          json: {
            user: options.user,
            role: options.role,
            expiresInSeconds: options.expires,
            group: options.group,
            qos: options.qos,
          },
        });
        if (options.json) return printJson(made);
        const extra = [made.group ? `group ${made.group}` : "", made.qos ? `QoS ${made.qos.join(",")}` : ""]
          .filter(Boolean)
          .join(", ");
        printNew(made, `token for ${made.user} (${made.role}${extra ? `; ${extra}` : ""})`);
      },
    );
  listAndRevoke(token, "/api/v1/tokens", {
    list: "API tokens and host credentials (never the tokens themselves)",
    none: "no tokens",
    revoke: "revoke a token or a host credential: refused from now on",
    id: "the token's id (steward token list)",
    revoked: (revoked) =>
      `${revoked.kind === "host" ? "host credential" : "token"} ${revoked.id} of ${revoked.user}: revoked`,
  });

  const join = program.command("join-token").description(describe("join-token"));
  join
    .command("create")
    .description("make a join token for agents of a pool; prints it once")
    .option("--pool <pool>", "the pool its agents join (without it, any pool)")
    .option(
      "--expires <lifetime>",
      "expire after this long (30d, 12h, ...); without it, never",
      lifetimeSeconds,
    )
    .option("--json", "print JSON")
    .action(async (options: { pool?: string; expires?: number; json?: boolean }) => {
      const made = await new ApiClient().json<NewTokenView>("POST", "/api/v1/join-tokens", {
        json: { pool: options.pool, expiresInSeconds: options.expires },
      });
      if (options.json) return printJson(made);
      printNew(made, `join token for ${made.pool ? `pool ${made.pool}` : "any pool"}`);
    });
  listAndRevoke(join, "/api/v1/join-tokens", {
    list: "join tokens (never the tokens themselves)",
    none: "no join tokens",
    revoke: "revoke a join token: its agents are disconnected and refused, with their host credentials",
    id: "the join token's id (steward join-token list)",
    revoked: (revoked) => `join token ${revoked.id}: revoked`,
  });

  program
    .command("whoami")
    .description(describe("whoami"))
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }) => {
      const me = await new ApiClient().json<WhoAmI>("GET", "/api/v1/whoami");
      if (options.json) return printJson(me);
      const token = me.tokenId === null ? "the admin token given at server start" : `token ${me.tokenId}`;
      process.stdout.write(
        `${me.user} (${me.role}), ${token}${me.expiresAt ? `, expires ${me.expiresAt}` : ""}\n`,
      );
    });
}

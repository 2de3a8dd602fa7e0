// steward secret set|list|rm: the caller's secrets, S3 credentials their jobs name by `credentials`
// on an s3: input or output (docs/data.md). `set` reads the value from standard input or the
// caller's environment, never from an argument (which `ps` would show); nothing prints a value.

import { type Command, InvalidArgumentError } from "commander";
import type { SecretView } from "../../common/api/secrets.ts";
import { describe } from "../../common/command-line/commands.ts";
import { secretNameProblem } from "../../common/model/secret-name.ts";
import { ApiClient } from "../client.ts";
import { printJson, shortTime, table } from "../format.ts";
import { secretValueOfEnvironment, secretValueOfText } from "../secret-input.ts";

function secretName(text: string): string {
  const problem = secretNameProblem(text);
  if (problem !== null) throw new InvalidArgumentError(`the name ${problem}`);
  return text;
}

function path(name: string): string {
  return `/api/v1/secrets/${encodeURIComponent(name)}`;
}

export function registerSecret(program: Command): void {
  const secret = program.command("secret").description(describe("secret"));
  secret
    .command("set")
    .description(
      'set a secret (new, or in place of yours of that name) from standard input, a JSON object: {"accessKeyId": ..., "secretAccessKey": ..., "sessionToken"?, "region"?, "endpoint"?}',
    )
    .argument("<name>", "its name: 1 to 64 letters, digits, _ . and -", secretName)
    .option(
      "--from-env",
      "take it from your environment instead: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION (or AWS_DEFAULT_REGION), AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL)",
    )
    .option("--json", "print JSON")
    .action(async (name: string, options: { fromEnv?: boolean; json?: boolean }) => {
      const value = options.fromEnv
        ? secretValueOfEnvironment(process.env)
        : secretValueOfText(await stdinText());
      // A PUT of the whole value: sending it again does no harm.
      const response = await new ApiClient().request("PUT", path(name), { json: value, idempotent: true });
      const set = (await response.json()) as SecretView;
      if (options.json) return printJson(set);
      process.stdout.write(`secret ${set.name} ${response.status === 201 ? "set" : "replaced"}\n`);
    });
  secret
    .command("list")
    .description("your secrets by name, with when each was set (never their values)")
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }) => {
      const secrets = await new ApiClient().json<SecretView[]>("GET", "/api/v1/secrets");
      if (options.json) return printJson(secrets);
      if (secrets.length === 0) return void process.stdout.write("no secrets\n");
      const rows = secrets.map((each) => [each.name, shortTime(each.createdAt), shortTime(each.updatedAt)]);
      process.stdout.write(`${table(["NAME", "CREATED", "UPDATED"], rows)}\n`);
    });
  secret
    .command("rm")
    .description(
      "remove a secret: jobs that name it are refused, and attempts that start after it fail their transfers",
    )
    .argument("<name>", "its name", secretName)
    .option("--json", "print JSON")
    .action(async (name: string, options: { json?: boolean }) => {
      const removed = await new ApiClient().json<SecretView>("DELETE", path(name));
      if (options.json) return printJson(removed);
      process.stdout.write(`secret ${removed.name} removed\n`);
    });
}

/** Standard input, whole. */
async function stdinText(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

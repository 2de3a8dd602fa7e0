// The shares file (`steward server --shares FILE`, docs/scheduling.md "Fair share"): a tree of
// accounts, each with a number of shares, holding users (each with shares within the account) and
// further accounts. Validated like the pools file: strict at every level, and an error names the
// field (`accounts.physics.users.alice: ...`); a server with a bad shares file does not start.
//
//   accounts:
//     physics:
//       shares: 3
//       users: {alice: 1, bob: 1}
//       accounts:
//         theory: {shares: 1, users: {dave: 1}}
//     biology: {shares: 1, users: {carol: 1}}

import { z } from "zod";
import { FileFieldError } from "./file-field-error.ts";
import { firstProblem } from "./first-problem.ts";
import { parseJobFileText } from "./jobfile-text.ts";

/** An account's or a user's share among its siblings: a positive number (3 beside 1 is three times as much). */
const shareCount = z.number().positive("must be a positive number").max(1_000_000_000);

const accountName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/,
    "an account name is 1 to 63 letters, digits, _, . or -, not starting with _, . or -",
  );

const userName = z.string().min(1, "a user name is not empty").max(255);

interface AccountInput {
  shares: number;
  users?: Record<string, number>;
  accounts?: Record<string, AccountInput>;
}

const accountSchema: z.ZodType<AccountInput> = z.lazy(() =>
  z.strictObject({
    shares: shareCount,
    users: z.record(userName, shareCount).optional(),
    accounts: z.record(accountName, accountSchema).optional(),
  }),
);

const sharesFileSchema = z.strictObject({ accounts: z.record(accountName, accountSchema) });

/** The top of the tree (`steward share`'s first line): no account takes its name. */
export const ROOT = "root";

/** A user's leaf in the tree. */
export interface ShareUser {
  name: string;
  shares: number;
}

/** An account: its shares among its siblings, its users and its sub-accounts, in file order. */
export interface ShareAccount {
  name: string;
  shares: number;
  users: ShareUser[];
  accounts: ShareAccount[];
}

/** The accounts under the root. Users named nowhere go in the default place (scheduler/fair-share-tree.ts). */
export interface ShareTree {
  accounts: ShareAccount[];
}

/** No shares file: every user is a leaf of one share under the root. */
export const FLAT_SHARE_TREE: ShareTree = { accounts: [] };

export class SharesFileError extends FileFieldError {
  override name = "SharesFileError";
}

/** The tree of a shares file's text (YAML or JSON); throws SharesFileError naming the first bad field. */
export function parseSharesFile(text: string): ShareTree {
  let input: unknown;
  try {
    input = parseJobFileText(text);
  } catch (error) {
    throw new SharesFileError("", (error as Error).message);
  }
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new SharesFileError("", "a shares file must be a mapping with an `accounts` mapping");
  if (!("accounts" in input))
    throw new SharesFileError("accounts", "missing: a shares file has an `accounts` mapping");
  const result = sharesFileSchema.safeParse(input);
  if (!result.success) {
    const { field, message } = firstProblem(result.error);
    // A bad key of a mapping: the message of its own check, not zod's "Invalid key in record".
    const issue = result.error.issues[0];
    if (issue.code === "invalid_key") throw new SharesFileError(field, issue.issues[0]?.message ?? message);
    throw new SharesFileError(field, message);
  }
  const users = new Map<string, string>();
  const accounts = new Map<string, string>();
  const build = (name: string, input: AccountInput, path: string): ShareAccount => {
    if (name === ROOT) throw new SharesFileError(path, `${ROOT} is the top of the tree, above every account`);
    const earlier = accounts.get(name);
    if (earlier !== undefined)
      throw new SharesFileError(path, `account ${name} is named twice (also at ${earlier})`);
    accounts.set(name, path);
    const account: ShareAccount = { name, shares: input.shares, users: [], accounts: [] };
    for (const [user, shares] of Object.entries(input.users ?? {})) {
      const at = `${path}.users.${user}`;
      const other = users.get(user);
      if (other !== undefined)
        throw new SharesFileError(at, `user ${user} is in two accounts (also at ${other})`);
      users.set(user, at);
      account.users.push({ name: user, shares });
    }
    for (const [child, childInput] of Object.entries(input.accounts ?? {}))
      account.accounts.push(build(child, childInput, `${path}.accounts.${child}`));
    return account;
  };
  return {
    accounts: Object.entries(result.data.accounts).map(([name, account]) =>
      build(name, account, `accounts.${name}`),
    ),
  };
}

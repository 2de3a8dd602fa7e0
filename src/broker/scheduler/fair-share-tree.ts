// The fair-share tree: each user's fair-share factor from the accounts' shares and everyone's
// decayed usage (docs/scheduling.md "The fair-share factor"). Slurm's classic factor applied level by level,
// ranked as Slurm's Fair Tree ranks users:
//
//   s = shares / (shares of the node and its siblings)       share within the parent
//   u = usage / (usage of the node and its siblings)         usage within the parent (0 when none used anything)
//   f = 2^(-u/s)                                             level factor: 1 (used nothing) down to 0
//
// Siblings are ranked by f, highest first, and the tree is walked depth first in that order: the
// users come out ranked, an under-served account's users before an over-served one's, whatever
// each user's own standing. A user's factor is its rank as Fair Tree gives it: (N - n) / N for N
// users and n users ranked before it, users with equal f all the way down sharing a rank. A user
// who has used nothing (a newcomer) ranks first, factor 1, whatever its account used. Two accounts
// that keep the grid busy thus settle where u = s, at the ratio of their shares (3:1 for 3 and 1),
// whether or not every user of theirs has work.
// Users named nowhere in the tree are leaves of one share: under the account named as their group
// when there is one, else under the root. Pure: usage and the time come in.

import { ROOT, type ShareAccount, type ShareTree } from "../../common/model/shares-file.ts";

/** The share given to a user the shares file does not name. */
export const DEFAULT_USER_SHARES = 1;

/** An account or a user with its figures. */
export interface ShareNode {
  name: string;
  kind: "account" | "user";
  /** Shares as the file gives them (a user named nowhere: DEFAULT_USER_SHARES). */
  rawShares: number;
  /** Its fraction of the whole grid: s times its parent's. */
  normShares: number;
  /** Decayed cpu-seconds (an account: its users' and sub-accounts' together). */
  usage: number;
  /** Its fraction of every user's usage. */
  normUsage: number;
  /** s: its shares over its and its siblings'. */
  levelShares: number;
  /** u: its usage over its and its siblings' (0 when none of them used anything). */
  levelUsage: number;
  /** f = 2^(-u/s): siblings are ranked by it, highest first. */
  levelFactor: number;
  /** A user's fair-share factor (its rank, 1 for the first, down to 1/N); null for an account. */
  factor: number | null;
  /** Accounts and users under it, ranked (highest level factor first; file order among equals). */
  children: ShareNode[];
}

/**
 * The cpu-seconds a running attempt has accrued by `now`, each second decayed as an ended
 * attempt's would be: cpus * h/ln 2 * (1 - 2^(-t/h)) for t seconds run, h the half-life
 * (about cpus * t while t is short beside h).
 */
export function runningUsage(cpus: number, startedAt: number, now: number, halfLifeSeconds: number): number {
  const seconds = Math.max(0, now - startedAt) / 1000;
  return ((cpus * halfLifeSeconds) / Math.LN2) * -Math.expm1(-(seconds / halfLifeSeconds) * Math.LN2);
}

/** Slurm's classic factor 2^(-U/S): 1 for a node that used nothing, 0 for one without share that used some (2^-∞). */
export function fairShareFactor(usage: number, shares: number): number {
  if (usage <= 0) return 1;
  return 2 ** (-usage / shares);
}

/**
 * The tree with every figure, for `users` (those with usage, and any others asked about) and the
 * users the tree names. `usage` gives a user's decayed cpu-seconds at the moment looked at.
 */
export function shareTreeOf(
  tree: ShareTree,
  usage: ReadonlyMap<string, number>,
  groupOf: (user: string) => string | undefined = () => undefined,
  users: Iterable<string> = usage.keys(),
): ShareNode {
  const root = skeleton({ name: ROOT, shares: 1, users: [], accounts: tree.accounts });
  const accounts = new Map<string, ShareNode>();
  const named = new Set<string>();
  const index = (node: ShareNode) => {
    if (node.kind === "user") named.add(node.name);
    else accounts.set(node.name, node);
    for (const child of node.children) index(child);
  };
  for (const child of root.children) index(child);
  const unnamed = [...new Set(users)].filter((user) => !named.has(user)).sort();
  for (const user of unnamed) {
    const group = groupOf(user);
    const parent = (group === undefined ? undefined : accounts.get(group)) ?? root;
    parent.children.push(leaf(user, DEFAULT_USER_SHARES));
  }
  const total = sumUsage(root, usage);
  root.normShares = 1;
  root.levelShares = 1;
  root.normUsage = total > 0 ? 1 : 0;
  root.levelUsage = root.normUsage;
  const figure = (parent: ShareNode) => {
    let siblingShares = 0;
    let siblingUsage = 0;
    for (const child of parent.children) {
      siblingShares += child.rawShares;
      siblingUsage += child.usage;
    }
    for (const node of parent.children) {
      // Every share is positive (shares-file.ts), so siblings have some.
      node.levelShares = node.rawShares / siblingShares;
      node.levelUsage = siblingUsage > 0 ? node.usage / siblingUsage : 0;
      node.levelFactor = fairShareFactor(node.levelUsage, node.levelShares);
      node.normShares = node.levelShares * parent.normShares;
      node.normUsage = total > 0 ? node.usage / total : 0;
      figure(node);
    }
    // Stable: equals keep the file's order.
    parent.children.sort((a, b) => b.levelFactor - a.levelFactor);
  };
  figure(root);
  rankUsers(root);
  return root;
}

/**
 * Sets each user's factor from its rank (Fair Tree): users who used nothing first, then the
 * others in the order of a depth-first walk of the ranked tree; users whose level factors are
 * equal all the way down share the rank of the first of them.
 */
function rankUsers(root: ShareNode): void {
  const ranked: { node: ShareNode; path: number[] }[] = [];
  const walk = (node: ShareNode, path: number[]) => {
    for (const child of node.children) {
      const at = [...path, child.levelFactor];
      if (child.kind === "user") ranked.push({ node: child, path: at });
      else walk(child, at);
    }
  };
  walk(root, []);
  const newcomers = ranked.filter((each) => each.node.usage <= 0);
  const others = ranked.filter((each) => each.node.usage > 0);
  const count = ranked.length;
  for (const each of newcomers) each.node.factor = 1;
  let tiedWith: number[] | null = null;
  let ahead = 0;
  for (const [index, each] of others.entries()) {
    if (tiedWith === null || !samePath(tiedWith, each.path)) {
      ahead = newcomers.length + index;
      tiedWith = each.path;
    }
    each.node.factor = (count - ahead) / count;
  }
}

function samePath(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/** Each user's factor in a figured tree. */
export function factorsOf(root: ShareNode): Map<string, number> {
  const factors = new Map<string, number>();
  const walk = (node: ShareNode) => {
    if (node.kind === "user") factors.set(node.name, node.factor ?? 1);
    for (const child of node.children) walk(child);
  };
  walk(root);
  return factors;
}

function skeleton(account: ShareAccount): ShareNode {
  return {
    ...blank(account.name, "account", account.shares),
    children: [
      ...account.users.map((user) => leaf(user.name, user.shares)),
      ...account.accounts.map(skeleton),
    ],
  };
}

function leaf(name: string, shares: number): ShareNode {
  return blank(name, "user", shares);
}

function blank(name: string, kind: ShareNode["kind"], rawShares: number): ShareNode {
  return {
    name,
    kind,
    rawShares,
    normShares: 0,
    usage: 0,
    normUsage: 0,
    levelShares: 0,
    levelUsage: 0,
    levelFactor: 1,
    // A user's is set by rankUsers.
    factor: null,
    children: [],
  };
}

function sumUsage(node: ShareNode, usage: ReadonlyMap<string, number>): number {
  if (node.kind === "user") node.usage = Math.max(0, usage.get(node.name) ?? 0);
  else {
    let sum = 0;
    for (const child of node.children) sum += sumUsage(child, usage);
    node.usage = sum;
  }
  return node.usage;
}

/** One line of `steward share`: a node of the tree, in tree order (an account, then what it holds), with its figures. */
export interface ShareLine
  extends Pick<
    ShareNode,
    | "kind"
    | "name"
    | "rawShares"
    | "normShares"
    | "usage"
    | "normUsage"
    | "levelShares"
    | "levelUsage"
    | "levelFactor"
    | "factor"
  > {
  /** The account it is in (null for the root). */
  parent: string | null;
  /** 0 for the root, 1 under it, and so on. */
  depth: number;
}

/**
 * The tree as lines, the root first. With `viewer`, only that user's own line and the accounts
 * above it (a user sees where they stand, not who else uses the grid); without, every line.
 */
export function shareLines(root: ShareNode, viewer?: string): ShareLine[] {
  const lines: ShareLine[] = [];
  const walk = (node: ShareNode, parent: ShareNode | null, depth: number): boolean => {
    const at = lines.length;
    let shown = viewer === undefined || (node.kind === "user" && node.name === viewer);
    const line: ShareLine = {
      kind: node.kind,
      name: node.name,
      parent: parent?.name ?? null,
      depth,
      rawShares: node.rawShares,
      normShares: node.normShares,
      usage: node.usage,
      normUsage: node.normUsage,
      levelShares: node.levelShares,
      levelUsage: node.levelUsage,
      levelFactor: node.levelFactor,
      factor: node.factor,
    };
    lines.push(line);
    for (const child of node.children) if (walk(child, node, depth + 1)) shown = true;
    if (!shown) lines.splice(at);
    return shown;
  };
  walk(root, null, 0);
  return lines;
}

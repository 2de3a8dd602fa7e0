// This checkout as another account can run it. A clone under a folder only root may pass (a 0700
// temporary folder, /root) cannot be run by the accounts the run-as and pilot tests make: there,
// as root, the checkout is bind-mounted at a folder of its own under /tmp (which every account may
// pass), and the test runs Steward from that path; `release` unmounts it. Each test file mounts
// its own, so files running at once never share one.

import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmdirSync } from "node:fs";
import { join } from "node:path";
import { accountCanRun } from "./local-accounts.ts";
import { ROOT } from "./steward.ts";

export interface ReachableCheckout {
  /** bin/steward at a path the account can run. */
  steward: string;
  /** The checkout's root at that path. */
  root: string;
  /** Unmounts the bind mount, when one was made (harmless twice). */
  release(): void;
}

/** The checkout as `account` can run it, or why it cannot be had. */
export function reachableCheckout(account: string): ReachableCheckout | { unavailable: string } {
  const own = join(ROOT, "bin", "steward");
  if (accountCanRun(account, own)) return { steward: own, root: ROOT, release: () => {} };
  if (process.getuid?.() !== 0)
    return { unavailable: `${account} cannot run ${own}, and only root can mount the checkout elsewhere` };
  const mountPoint = mkdtempSync("/tmp/steward-checkout-");
  chmodSync(mountPoint, 0o755);
  try {
    execFileSync("mount", ["--bind", ROOT, mountPoint]);
  } catch (error) {
    rmdirSync(mountPoint);
    return { unavailable: `cannot bind-mount the checkout for ${account}: ${(error as Error).message}` };
  }
  let mounted = true;
  const release = () => {
    if (!mounted) return;
    mounted = false;
    execFileSync("sh", ["-c", 'umount "$1" 2>/dev/null || umount -l "$1"; rmdir "$1"', "sh", mountPoint]);
  };
  const steward = join(mountPoint, "bin", "steward");
  if (!accountCanRun(account, steward)) {
    release();
    return {
      unavailable: `${account} cannot run ${steward} either: the checkout's own files are closed to it`,
    };
  }
  return { steward, root: mountPoint, release };
}

// What the routes under /api/v1/jobs are handed.

import type { PoolNote } from "../../../pools/pool-manager.ts";
import type { JobEntry } from "../../../state/job-entry.ts";
import type { ApiPorts, JobFiles, StoreReads } from "../../ports.ts";
import type { SubmitRateLimiter } from "../../rate-limit.ts";

export interface JobRouteDeps {
  ports: ApiPorts;
  store: StoreReads;
  files: JobFiles;
  /** The largest input file a submit may bring, in bytes. */
  maxUploadBytes: number;
  /** Submits per user token (admins are not limited). */
  submitLimiter: SubmitRateLimiter;
  /** What each batch-backed pool does for a job (a dry run's explanation). */
  explainPools: (job: JobEntry) => PoolNote[];
}

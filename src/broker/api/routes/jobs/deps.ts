// What the routes under /api/v1/jobs are handed.

import type { ApiPorts, JobFiles } from "../../ports.ts";
import type { SubmitRateLimiter } from "../../rate-limit.ts";

export interface JobRouteDeps {
  ports: ApiPorts;
  files: JobFiles;
  /** The largest input file a submit may bring, in bytes. */
  maxUploadBytes: number;
  /** Submits per user token (admins are not limited). */
  submitLimiter: SubmitRateLimiter;
}

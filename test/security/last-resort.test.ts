// The last-resort guard: an error that escapes a request's work (an 'error' event nobody listens
// to, a rejection nobody awaits) is answered 500 for that request alone, without its details, and
// the process goes on serving. Without the guard, Node ends the process.

import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ROOT } from "../helpers/steward.ts";

let child: ChildProcess;
let url: string;
let log = "";

beforeAll(async () => {
  child = spawn(process.execPath, [join(ROOT, "test/helpers/stray-error-server.ts")], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stderr!.on("data", (chunk) => {
    log += chunk;
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once("data", (chunk) => resolve(String(chunk).trim()));
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${log}`)));
  });
  url = `http://127.0.0.1:${port}`;
});

afterAll(() => {
  child?.kill("SIGKILL");
});

it.each(["stray-error", "stray-rejection"])(
  "/%s answers 500 with the request's id and no detail, and the process goes on",
  async (route) => {
    const response = await fetch(`${url}/${route}`, { signal: AbortSignal.timeout(5000) });
    expect(response.status).toBe(500);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("internal");
    expect(error.message).toMatch(/^internal error \(request req-\w+; the server's log has it\)$/);
    expect(error.message).not.toContain("secret");
    const requestId = /request (req-\w+)/.exec(error.message)![1];
    // The log has the details, under the same id.
    const line = log
      .split("\n")
      .find((entry) => entry.includes("secret detail") && entry.includes(requestId));
    expect(line, log).toBeDefined();
    expect(child.exitCode).toBeNull();
    expect((await fetch(`${url}/ok`)).status).toBe(200);
  },
);

// A job submitted through the API with its input files in the same request (multipart), as
// `steward submit` sends them: the tests that need the server to hold an uploaded input.

import { expect } from "vitest";

/** Submits `job` with `files` (name: content) uploaded as its inputs; the new job's id. */
export async function submitUploading(
  server: { url: string; token: string },
  job: Record<string, unknown>,
  files: Record<string, Uint8Array>,
): Promise<string> {
  const form = new FormData();
  form.append("job", JSON.stringify({ ...job, inputs: Object.keys(files) }));
  for (const [name, content] of Object.entries(files)) form.append(name, new Blob([content]), name);
  const response = await fetch(`${server.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}` },
    body: form,
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

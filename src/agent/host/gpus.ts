// The GPUs an agent declares (`--gpus`): named (`0,1,3`), or found on the host (`auto`) from
// `nvidia-smi -L`, else from the /dev/nvidiaN device files. Ids are NVIDIA's device indexes, the
// numbers CUDA_VISIBLE_DEVICES takes and /dev/nvidiaN is named by.

import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";

/** A GPU id as `--gpus` names it: a device index. */
const GPU_ID = /^[0-9]+$/;

/** `--gpus 0,1,3`: the ids named, in order, without repeats; `auto` is not parsed here. Throws on a bad id. */
export function parseGpuList(value: string): string[] {
  const ids: string[] = [];
  for (const part of value.split(",")) {
    const id = part.trim();
    if (!GPU_ID.test(id))
      throw new Error(`--gpus needs auto or device indexes (0,1,3), not ${JSON.stringify(part)}`);
    const index = String(Number(id));
    if (!ids.includes(index)) ids.push(index);
  }
  return ids;
}

/** The device indexes of `nvidia-smi -L` output ("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)"). */
export function parseNvidiaSmiList(text: string): string[] {
  const ids: string[] = [];
  for (const line of text.split("\n")) {
    const match = /^GPU (\d+):/.exec(line.trim());
    if (match && !ids.includes(match[1])) ids.push(match[1]);
  }
  return ids;
}

/** The device indexes of /dev/nvidiaN files (nvidiactl, nvidia-uvm and the like are not GPUs). */
export function parseDeviceNames(names: readonly string[]): string[] {
  return names
    .map((name) => /^nvidia(\d+)$/.exec(name)?.[1])
    .filter((id): id is string => id !== undefined)
    .sort((a, b) => Number(a) - Number(b));
}

/** The host's NVIDIA GPUs: from `nvidia-smi -L` where it runs, else from /dev; none found is an empty list. */
export async function detectGpus(devDir = "/dev"): Promise<string[]> {
  const listed = await new Promise<string | null>((resolve) => {
    execFile("nvidia-smi", ["-L"], { timeout: 10_000 }, (error, stdout) => resolve(error ? null : stdout));
  });
  if (listed !== null) {
    const ids = parseNvidiaSmiList(listed);
    if (ids.length > 0) return ids;
  }
  try {
    return parseDeviceNames(await readdir(devDir));
  } catch {
    return [];
  }
}

/** `--gpus`: `auto` detects them; anything else is a list of ids. */
export async function declaredGpus(value: string | undefined): Promise<string[]> {
  if (value === undefined || value === "") return [];
  if (value.trim() === "auto") return detectGpus();
  return parseGpuList(value);
}

// The keys a schema knows for the mapping at a path of a file (`["resources"]`: cpus, memoryMb,
// ...), read from the zod schema itself so that suggestions for an unknown key never drift from
// what the file accepts.

import type { z } from "zod";

type Def = { type: string } & Record<string, unknown>;

function defOf(schema: unknown): Def {
  return (schema as { _zod: { def: Def } })._zod.def;
}

/** The schemas a value may be checked by, wrappers (optional, default, a transform's input) opened. */
function forms(schema: unknown): unknown[] {
  const def = defOf(schema);
  switch (def.type) {
    case "optional":
    case "default":
    case "prefault":
    case "nullable":
    case "readonly":
    case "catch":
      return forms(def.innerType);
    case "pipe":
      return forms(def.in);
    case "union":
      return (def.options as unknown[]).flatMap(forms);
    default:
      return [schema];
  }
}

/** The schemas of what is under `part` of a value checked by `schema`. */
function childrenOf(schema: unknown, part: string | number): unknown[] {
  return forms(schema).flatMap((form) => {
    const def = defOf(form);
    if (def.type === "object") {
      const shape = def.shape as Record<string, unknown>;
      return typeof part === "string" && Object.hasOwn(shape, part) ? [shape[part]] : [];
    }
    if (def.type === "array") return typeof part === "number" ? [def.element] : [];
    if (def.type === "record") return typeof part === "string" ? [def.valueType] : [];
    return [];
  });
}

/** The keys of the mapping at `path` under `schema` (none when no mapping of known keys is there). */
export function knownKeysAt(schema: z.ZodType, path: readonly (string | number)[]): string[] {
  let at: unknown[] = [schema];
  for (const part of path) at = at.flatMap((each) => childrenOf(each, part));
  const keys = new Set<string>();
  for (const form of at.flatMap(forms)) {
    const def = defOf(form);
    if (def.type === "object") for (const key of Object.keys(def.shape as object)) keys.add(key);
  }
  return [...keys];
}

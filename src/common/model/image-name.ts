// A container image's name, as skopeo and podman write them (docs/containers.md): `oci-archive:PATH`
// (an OCI image layout packed in a tar), `oci:DIR[:TAG]` (an OCI image layout folder, the image
// the tag names in its index.json, or its only image). PATH and DIR are absolute (a host path, in a
// folder the host shares) or relative (one of the job's inputs, in its working folder).
// `docker-archive:` and `docker://` are known and refused as not supported yet. No I/O.

import { relativePathProblem } from "./relative-path.ts";
import { absoluteFolderProblem } from "./shared-folders.ts";

/** An image the agent can unpack. */
export type ImageName =
  | { transport: "oci-archive"; path: string }
  | { transport: "oci"; path: string; tag?: string };

/** Transports skopeo names that Steward does not take yet. */
const NOT_YET = ["docker-archive:", "docker://", "docker-daemon:", "containers-storage:", "dir:"] as const;

/** A tag as an OCI layout's index.json names it (org.opencontainers.image.ref.name). */
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/** The image a name means, or why it means none (a sentence to show after the field's name). */
export function parseImageName(text: string): { image: ImageName } | { problem: string } {
  for (const prefix of NOT_YET)
    if (text.startsWith(prefix))
      return {
        problem: `${prefix} images are not supported yet: give an OCI image as oci-archive:PATH or oci:DIR[:TAG] (skopeo copy ${prefix}... oci-archive:FILE makes one)`,
      };
  if (text.startsWith("oci-archive:")) {
    const path = text.slice("oci-archive:".length);
    const problem = pathProblem(path);
    return problem ? { problem: `oci-archive:${problem}` } : { image: { transport: "oci-archive", path } };
  }
  if (text.startsWith("oci:")) {
    const rest = text.slice("oci:".length);
    // The tag follows the last colon, when what follows it is a tag (a path holds no colon here).
    const colon = rest.lastIndexOf(":");
    const path = colon < 0 ? rest : rest.slice(0, colon);
    const tag = colon < 0 ? undefined : rest.slice(colon + 1);
    if (tag !== undefined && !TAG.test(tag))
      return { problem: `oci: tag ${JSON.stringify(tag)} is not a tag` };
    const problem = pathProblem(path);
    if (problem) return { problem: `oci:${problem}` };
    return { image: tag === undefined ? { transport: "oci", path } : { transport: "oci", path, tag } };
  }
  return {
    problem: `${JSON.stringify(text)} is not an image name: give oci-archive:PATH or oci:DIR[:TAG]`,
  };
}

/** The image's path on the host when it is absolute (in a shared folder), else undefined (an input). */
export function imageHostPath(image: ImageName): string | undefined {
  return image.path.startsWith("/") ? image.path : undefined;
}

function pathProblem(path: string): string | null {
  if (path === "") return " the path is missing";
  if (path.includes(":")) return ` the path ${JSON.stringify(path)} may not hold a colon`;
  const problem = path.startsWith("/") ? absoluteFolderProblem(path) : relativePathProblem(path);
  return problem ? ` the path ${JSON.stringify(path)} ${problem}` : null;
}

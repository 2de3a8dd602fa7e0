// The job file's `container`: the image the job's command runs in, with an OCI runtime on the host
// (docs/containers.md). What the job file, the start message and the scheduler's feasibility
// share: the image's name (image-name.ts), bind mounts of host folders, the entrypoint and the
// network. Host paths it names (an absolute image, mounts' sources) must lie in folders the host
// shares, as a `workdir` does. No I/O.

import { z } from "zod";
import { imageHostPath, parseImageName } from "./image-name.ts";
import { absoluteFolderProblem } from "./shared-folders.ts";

/** `host`: the host's own network (the default, as HTCondor's and Slurm's containers); `none`: a loopback only. */
export const CONTAINER_NETWORKS = ["host", "none"] as const;
export type ContainerNetwork = (typeof CONTAINER_NETWORKS)[number];

const absolutePath = z.string().superRefine((path, context) => {
  const problem = absoluteFolderProblem(path);
  if (problem) context.addIssue({ code: "custom", message: `${JSON.stringify(path)} ${problem}` });
});

const imageName = z.string().superRefine((text, context) => {
  const parsed = parseImageName(text);
  if ("problem" in parsed) context.addIssue({ code: "custom", message: parsed.problem });
});

/** A bind mount as the start message carries it (the job file's, its defaults filled in). */
export interface ContainerMount {
  source: string;
  target: string;
  readOnly: boolean;
}

/** The container as the start message carries it to the agent. */
export interface ContainerSpec {
  image: string;
  mounts: ContainerMount[];
  entrypoint?: string[];
  network: ContainerNetwork;
}

export const containerMountSchema = z.strictObject({
  source: absolutePath.meta({
    description: "A folder or file of the host, in a folder the host shares (its agent's `--shared`).",
    examples: ["/data/reference"],
  }),
  target: absolutePath
    .optional()
    .meta({ description: "Where the job sees it (absent: at the same path).", examples: ["/ref"] }),
  readOnly: z
    .boolean()
    .default(true)
    .meta({ description: "Mounted read-only (absent: true).", examples: [false] }),
});

export const containerSchema = z.strictObject({
  image: imageName.meta({
    description:
      "The image, as skopeo names it: `oci-archive:PATH` (an OCI image layout in a tar) or `oci:DIR[:TAG]` (an OCI image layout folder; the image its index.json tags TAG, or its only one). PATH and DIR are absolute paths in a folder the host shares (its agent's `--shared`), or for `oci-archive:` one of the job's `inputs`. `docker-archive:` and `docker://` are refused: not supported yet.",
    examples: ["oci-archive:/data/images/tools.tar"],
  }),
  mounts: z
    .array(containerMountSchema)
    .max(64)
    .default([])
    .meta({
      description:
        "Host folders or files bind-mounted into the container, each in a folder the host shares. The job's working folder and `$STEWARD_CHECKPOINT_DIR` are always mounted, at their own paths.",
      examples: [[{ source: "/data/reference", target: "/ref" }]],
    }),
  entrypoint: z
    .array(
      z
        .string()
        .min(1)
        .regex(/^[^\0]*$/, "must not contain a NUL byte"),
    )
    .min(1)
    .optional()
    .meta({
      description:
        "The program the command's words are given to, as a list (the image's own entrypoint is not read). Absent: a string command runs through the image's `/bin/sh -c`, a list is executed as it is.",
      examples: [["/usr/bin/python3", "-u"]],
    }),
  network: z
    .enum(CONTAINER_NETWORKS)
    .default("host")
    .meta({
      description:
        "`host` (absent): the host's network, as outside (the job reaches the server, its peers and data as a job outside would); `none`: a network namespace of its own with only a loopback interface.",
      examples: ["none"],
    }),
});

/** The host paths a container names (an absolute image, each mount's source): each must be in a shared folder. */
export function containerHostPaths(container: {
  image: string;
  mounts: readonly { source: string }[];
}): string[] {
  const parsed = parseImageName(container.image);
  const image = "image" in parsed ? imageHostPath(parsed.image) : undefined;
  return [...(image === undefined ? [] : [image]), ...container.mounts.map((mount) => mount.source)];
}

/** The container as the agent is told it: each mount's target and read-only filled in. */
export function containerForAgent(container: z.output<typeof containerSchema>): ContainerSpec {
  return {
    image: container.image,
    mounts: container.mounts.map((mount) => ({
      source: mount.source,
      target: mount.target ?? mount.source,
      readOnly: mount.readOnly,
    })),
    ...(container.entrypoint ? { entrypoint: container.entrypoint } : {}),
    network: container.network,
  };
}

/**
 * What is wrong with where a job's image comes from, or null. One given by a relative path is one
 * of the job's `inputs` (it comes with the job into its working folder): an `oci-archive:` file; an
 * `oci:` layout is a folder, on the host. A name that does not parse is the schema's to refuse.
 */
export function containerImageProblem(image: string, inputs: readonly unknown[]): string | null {
  const parsed = parseImageName(image);
  if (!("image" in parsed) || parsed.image.path.startsWith("/")) return null;
  if (parsed.image.transport === "oci")
    return "an oci: layout is a folder of the host: give its absolute path, in a folder the host shares";
  if (!inputs.includes(parsed.image.path))
    return `${parsed.image.path} is not one of the job's inputs: list it in inputs, or give an absolute path in a folder the host shares`;
  return null;
}

// The job file's `container`: its defaults, what the agent is told, and what is refused at submit.

import { describe, expect, it } from "vitest";
import { containerForAgent } from "../../../../src/common/model/container-spec.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";

function rejection(input: Record<string, unknown>): JobFileError {
  try {
    validateJobSpec(input);
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return error as JobFileError;
  }
  throw new Error("validateJobSpec took it");
}

describe("validateJobSpec container", () => {
  it("fills in the network (host) and mounts (none); a mount is read-only at its own path unless told", () => {
    const spec = validateJobSpec({ command: "x", container: { image: "oci-archive:/data/i.tar" } });
    expect(spec.container).toStrictEqual({ image: "oci-archive:/data/i.tar", mounts: [], network: "host" });
    const full = validateJobSpec({
      command: "x",
      inputs: ["i.tar"],
      container: {
        image: "oci-archive:i.tar",
        mounts: [{ source: "/data/ref" }, { source: "/scratch", target: "/s", readOnly: false }],
        entrypoint: ["/usr/bin/python3"],
        network: "none",
      },
    });
    expect(containerForAgent(full.container!)).toStrictEqual({
      image: "oci-archive:i.tar",
      mounts: [
        { source: "/data/ref", target: "/data/ref", readOnly: true },
        { source: "/scratch", target: "/s", readOnly: false },
      ],
      entrypoint: ["/usr/bin/python3"],
      network: "none",
    });
  });

  it.each<[string, Record<string, unknown>, string, RegExp]>([
    [
      "a docker:// image",
      { image: "docker://debian:12" },
      "container.image",
      /docker:\/\/ images are not supported yet/,
    ],
    ["a docker-archive", { image: "docker-archive:/x.tar" }, "container.image", /not supported yet/],
    [
      "an archive that is not an input",
      { image: "oci-archive:i.tar" },
      "container.image",
      /i.tar is not one of the job's inputs/,
    ],
    [
      "a relative layout folder",
      { image: "oci:layout" },
      "container.image",
      /an oci: layout is a folder of the host/,
    ],
    [
      "a relative mount",
      { image: "oci:/l", mounts: [{ source: "data" }] },
      "container.mounts[0].source",
      /must be an absolute path/,
    ],
    ["another network", { image: "oci:/l", network: "bridge" }, "container.network", /./],
    ["an unknown key", { image: "oci:/l", volumes: [] }, "container.volumes", /did you mean mounts/],
  ])("refuses %s, naming the field", (_, container, field, message) => {
    const error = rejection({ command: "x", container });
    expect(error.field).toBe(field);
    expect(error.problem).toMatch(message);
  });
});

// What explain says of a job's data affinity: nothing for a job none of whose inputs is known by
// digest; else how many are, and which hosts' caches hold how many bytes of them (the most first,
// then by name; a line names five and counts the rest), as the pass itself looks them up.

import { describe, expect, it } from "vitest";
import { explain } from "../../../../src/broker/scheduler/explain.ts";
import { bytesText, explainDataAffinity } from "../../../../src/broker/scheduler/explain-data.ts";
import { hostView, jobView, NOW } from "../../../helpers/scheduler-views.ts";

const A = "a".repeat(64);
const B = "b".repeat(64);

describe("explainDataAffinity", () => {
  it("says nothing of a job with no input known by digest", () => {
    expect(explainDataAffinity({}, new Map([[A, new Map([["h1", 1]])]]))).toBeNull();
    expect(explainDataAffinity({ inputDigests: [] }, undefined)).toBeNull();
  });

  it("says when no host's cache holds them", () => {
    expect(explainDataAffinity({ inputDigests: [A, B] }, undefined)).toStrictEqual({
      inputs: 2,
      hosts: [],
      line: "data affinity: no host's cache holds its 2 inputs known by digest",
    });
  });

  it("names the hosts holding them, the most bytes first, then by name", () => {
    const cached = new Map([
      [
        A,
        new Map([
          ["c", 2048],
          ["b", 2048],
          ["a", 100],
        ]),
      ],
      [B, new Map([["a", 1_048_576]])],
    ]);
    const said = explainDataAffinity({ inputDigests: [A] }, cached);
    expect(said?.hosts).toStrictEqual([
      { host: "b", bytes: 2048 },
      { host: "c", bytes: 2048 },
      { host: "a", bytes: 100 },
    ]);
    expect(said?.line).toBe(
      "data affinity: hosts whose cache holds more of its 1 input known by digest go first among those with room, after its rank (a free host never waits for them): b 2.0 KiB, c 2.0 KiB, a 100 bytes",
    );
    expect(explainDataAffinity({ inputDigests: [A, B] }, cached)?.hosts[0]).toStrictEqual({
      host: "a",
      bytes: 1_048_676,
    });
  });

  it("orders hosts holding as much by name, whatever order the holders come in", () => {
    for (const order of [
      ["c", "a", "d", "b"],
      ["d", "c", "b", "a"],
      ["a", "b", "c", "d"],
      ["b", "d", "a", "c"],
    ]) {
      const holders = new Map(order.map((host) => [host, 8]));
      const said = explainDataAffinity({ inputDigests: [A] }, new Map([[A, holders]]));
      expect(said?.hosts.map((each) => each.host)).toStrictEqual(["a", "b", "c", "d"]);
    }
  });

  it("names up to five hosts in its line without counting more", () => {
    const holders = new Map(Array.from({ length: 5 }, (_, i) => [`h${i}`, 10 - i]));
    const said = explainDataAffinity({ inputDigests: [A] }, new Map([[A, holders]]));
    expect(said?.line).toMatch(/: h0 10 bytes, h1 9 bytes, h2 8 bytes, h3 7 bytes, h4 6 bytes$/);
  });

  it("names five hosts in its line and counts the others", () => {
    const holders = new Map(Array.from({ length: 7 }, (_, i) => [`h${i}`, 10 - i]));
    const said = explainDataAffinity({ inputDigests: [A] }, new Map([[A, holders]]));
    expect(said?.hosts).toHaveLength(7);
    expect(said?.line).toMatch(/: h0 10 bytes, h1 9 bytes, h2 8 bytes, h3 7 bytes, h4 6 bytes and 2 more$/);
  });
});

describe("bytesText", () => {
  it("says bytes in the largest binary unit under 1024 of it", () => {
    const cases: [number, string][] = [
      [0, "0 bytes"],
      [1023, "1023 bytes"],
      [1024, "1.0 KiB"],
      [1536, "1.5 KiB"],
      [1024 ** 2, "1.0 MiB"],
      [5 * 1024 ** 3, "5.0 GiB"],
      [3 * 1024 ** 4, "3.0 TiB"],
      [2048 * 1024 ** 4, "2048.0 TiB"],
    ];
    expect(cases.map(([bytes]) => bytesText(bytes))).toStrictEqual(cases.map(([, text]) => text));
  });
});

describe("explain", () => {
  it("names the hosts holding the job's inputs, from the pass's cached objects or its own", () => {
    const job = jobView("j", { inputDigests: [A] });
    const hosts = [hostView("h1"), hostView("h2")];
    const cached = new Map([[A, new Map([["h2", 5]])]]);
    const fromPass = explain({
      now: NOW,
      job,
      hosts,
      queue: [job],
      pass: { now: NOW, jobs: [job], hosts, cached },
    });
    expect(fromPass.data?.hosts).toStrictEqual([{ host: "h2", bytes: 5 }]);
    expect(fromPass.nextPass.starts).toStrictEqual([{ task: 0, hosts: ["h2"], replica: false }]);
    const own = explain({ now: NOW, job, hosts, queue: [job], cached });
    expect(own.data?.hosts).toStrictEqual([{ host: "h2", bytes: 5 }]);
    expect(explain({ now: NOW, job: jobView("k"), hosts, queue: [] }).data).toBeNull();
  });
});

// Whether any host shares a job's workdir: the folders the hosts share, a submit refused when they
// share folders and none holds the workdir, and explain's reason while no host shares one that does.

import { describe, expect, it } from "vitest";
import {
  declaredFolders,
  workdirRefusal,
  workdirWaitReason,
} from "../../../../src/broker/scheduler/shared-workdir.ts";
import { hostView } from "../../../helpers/scheduler-views.ts";

describe("declaredFolders", () => {
  it("lists each folder the hosts share once, in the order first met", () => {
    const hosts = [
      hostView("a", { facts: { shared: ["/data", "/scratch"] } }),
      hostView("b"),
      hostView("c", { facts: { shared: [] } }),
      hostView("d", { facts: { shared: ["/scratch", "/home"] } }),
    ];
    expect(declaredFolders(hosts)).toEqual(["/data", "/scratch", "/home"]);
  });

  it("adds the folders the pools file shares, before any of its pilots has joined, once each", () => {
    const hosts = [hostView("a", { facts: { shared: ["/data"] } })];
    expect(declaredFolders(hosts, ["/scratch", "/data"])).toEqual(["/data", "/scratch"]);
    expect(declaredFolders([], ["/scratch"])).toEqual(["/scratch"]);
  });

  it("is empty when no host shares a folder", () => {
    expect(declaredFolders([hostView("a"), hostView("b", { facts: { shared: [] } })])).toEqual([]);
    expect(declaredFolders([])).toEqual([]);
  });
});

describe("workdirRefusal (at submit)", () => {
  it.each<[string, string | undefined, string[], string | null]>([
    ["no workdir", undefined, ["/data"], null],
    ["a workdir a shared folder holds", "/data/run1", ["/scratch", "/data"], null],
    ["the shared folder itself", "/data", ["/data"], null],
    ["no host shares any folder yet: it waits instead", "/data/run1", [], null],
    [
      "hosts share folders, none holds it",
      "/dat/run1",
      ["/data", "/scratch"],
      "/dat/run1 is in no folder the hosts share (they share /data, /scratch): a job runs in place only in a shared folder",
    ],
    [
      "a folder beside a shared one",
      "/data2/run1",
      ["/data"],
      "/data2/run1 is in no folder the hosts share (they share /data): a job runs in place only in a shared folder",
    ],
    [
      "five shared folders: all named",
      "/x",
      ["/a", "/b", "/c", "/d", "/e"],
      "/x is in no folder the hosts share (they share /a, /b, /c, /d, /e): a job runs in place only in a shared folder",
    ],
    [
      "many shared folders: the first five, and how many more",
      "/x",
      ["/a", "/b", "/c", "/d", "/e", "/f", "/g"],
      "/x is in no folder the hosts share (they share /a, /b, /c, /d, /e and 2 more): a job runs in place only in a shared folder",
    ],
  ])("%s", (_, workdir, declared, message) => {
    const refusal = workdirRefusal(workdir, declared);
    expect(refusal).toEqual(message === null ? null : { status: 400, field: "workdir", message });
  });
});

describe("workdirWaitReason (explain)", () => {
  it.each<[string, string | undefined, string[], string | null]>([
    ["no workdir", undefined, [], null],
    ["a host shares a folder that holds it", "/data/run1", ["/data"], null],
    [
      "no host shares any folder",
      "/data/run1",
      [],
      "its workdir /data/run1 is in no folder a host shares (no host shares a folder): it waits for a host that shares one holding it (an agent's --shared)",
    ],
    [
      "hosts share only other folders (the one that shared it went)",
      "/data/run1",
      ["/scratch"],
      "its workdir /data/run1 is in no folder a host shares (the hosts share only /scratch): it waits for a host that shares one holding it (an agent's --shared)",
    ],
  ])("%s", (_, workdir, declared, reason) => {
    expect(workdirWaitReason(workdir, declared)).toBe(reason);
  });
});

// Layers applied over a root folder: whiteouts and opaque folders remove what lower layers put,
// members keep their owner and mode, and nothing is written or linked through a symbolic link
// (it could leave the root: the agent unpacks as root). Layers made with GNU tar.

import { execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  createReadStream,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { applyLayer } from "../../../../src/agent/containers/layer-apply.ts";

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const made = mkdtempSync(join(tmpdir(), "steward-layer-"));
  folders.push(made);
  return made;
}

/** A layer tar of the files `make` puts in a fresh folder. */
function layer(make: (dir: string) => void): string {
  const dir = folder();
  const content = join(dir, "content");
  mkdirSync(content);
  make(content);
  const tar = join(dir, "layer.tar");
  execFileSync("tar", ["-C", content, "--numeric-owner", "-cf", tar, "."]);
  return tar;
}

async function apply(root: string, tar: string): Promise<void> {
  await applyLayer(root, createReadStream(tar));
}

it("a whiteout removes a lower layer's file; an opaque folder loses the lower layer's contents, not its own", async () => {
  const root = folder();
  await apply(
    root,
    layer((dir) => {
      mkdirSync(join(dir, "etc"));
      writeFileSync(join(dir, "etc", "motd"), "hello");
      writeFileSync(join(dir, "etc", "keep"), "kept");
      mkdirSync(join(dir, "cache"));
      writeFileSync(join(dir, "cache", "old"), "old");
    }),
  );
  await apply(
    root,
    layer((dir) => {
      mkdirSync(join(dir, "etc"));
      writeFileSync(join(dir, "etc", ".wh.motd"), "");
      mkdirSync(join(dir, "cache"));
      writeFileSync(join(dir, "cache", "new"), "new");
      writeFileSync(join(dir, "cache", ".wh..wh..opq"), "");
    }),
  );
  expect(existsSync(join(root, "etc", "motd"))).toBe(false);
  expect(existsSync(join(root, "etc", ".wh.motd"))).toBe(false);
  expect(readFileSync(join(root, "etc", "keep"), "utf8")).toBe("kept");
  expect(existsSync(join(root, "cache", "old"))).toBe(false);
  expect(readFileSync(join(root, "cache", "new"), "utf8")).toBe("new");
  expect(existsSync(join(root, "cache", ".wh..wh..opq"))).toBe(false);
});

it.skipIf(process.getuid?.() !== 0)(
  "keeps a member's owner, mode (set-user-ID too), links and hard links",
  async () => {
    const root = folder();
    await apply(
      root,
      layer((dir) => {
        writeFileSync(join(dir, "tool"), "#!/bin/sh\n");
        chownSync(join(dir, "tool"), 1234, 2345);
        chmodSync(join(dir, "tool"), 0o4755);
        symlinkSync("tool", join(dir, "alias"));
        linkSync(join(dir, "tool"), join(dir, "same"));
      }),
    );
    const tool = lstatSync(join(root, "tool"));
    expect([tool.uid, tool.gid, tool.mode & 0o7777]).toStrictEqual([1234, 2345, 0o4755]);
    expect(lstatSync(join(root, "alias")).isSymbolicLink()).toBe(true);
    expect(lstatSync(join(root, "same")).ino).toBe(tool.ino);
  },
);

it("refuses a member under a lower layer's link to outside the root, and writes nothing there", async () => {
  const outside = folder();
  const root = folder();
  await apply(
    root,
    layer((dir) => symlinkSync(outside, join(dir, "etc"))),
  );
  const writing = layer((dir) => {
    mkdirSync(join(dir, "etc"));
    writeFileSync(join(dir, "etc", "x"), "escaped");
  });
  // Only the file, not its folder: GNU tar writes `./etc/` too; a layer may list only the file.
  const fileOnly = join(folder(), "file-only.tar");
  execFileSync("tar", ["-C", join(writing, "..", "content"), "--numeric-owner", "-cf", fileOnly, "./etc/x"]);
  await expect(apply(root, fileOnly)).rejects.toThrow(/writes under etc, a symbolic link/);
  expect(existsSync(join(outside, "x"))).toBe(false);
});

it("a whiteout under a link to outside removes nothing there", async () => {
  const outside = folder();
  writeFileSync(join(outside, "precious"), "keep me");
  const root = folder();
  await apply(
    root,
    layer((dir) => symlinkSync(outside, join(dir, "data"))),
  );
  const whiteout = layer((dir) => {
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "data", ".wh.precious"), "");
  });
  const only = join(folder(), "only.tar");
  execFileSync("tar", [
    "-C",
    join(whiteout, "..", "content"),
    "--numeric-owner",
    "-cf",
    only,
    "./data/.wh.precious",
  ]);
  await apply(root, only);
  expect(readFileSync(join(outside, "precious"), "utf8")).toBe("keep me");
});

it("a member that leaves the root is refused", async () => {
  const root = folder();
  const dir = folder();
  writeFileSync(join(dir, "x"), "x");
  const tar = join(dir, "up.tar");
  // GNU tar keeps ../ in a name only when told to (-P).
  execFileSync("tar", ["-C", dir, "-P", "-cf", tar, "../".concat(dir.split("/").pop() ?? "", "/x")]);
  await expect(apply(root, tar)).rejects.toThrow(/leaves the image's root/);
});

it("a damaged archive is refused", async () => {
  const root = folder();
  const tar = layer((dir) => writeFileSync(join(dir, "a"), "a".repeat(2000)));
  const bytes = readFileSync(tar);
  bytes[100] ^= 0xff;
  writeFileSync(tar, bytes);
  await expect(apply(root, tar)).rejects.toThrow(/checksum is wrong/);
});

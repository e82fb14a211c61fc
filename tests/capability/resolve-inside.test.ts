import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, realpath, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { resolveInside } from "../../runtime/capability/resolve-inside.ts";
import { removeCheckout, tempCheckout, writeFiles } from "../_support/capability-fixtures.ts";

let root: string;
let outside: string;

beforeAll(async () => {
  root = await tempCheckout();
  outside = await realpath(await mkdtemp(join(tmpdir(), "docket-outside-")));
  await writeFiles(root, { "src/a.txt": "a" });
  await symlink(outside, join(root, "out"));
  await symlink(join(outside, "not-yet"), join(root, "dangling"));
  await symlink(join(root, "src"), join(root, "src-link"));
  await mkdir(join(root, "empty"));
});

afterAll(async () => {
  await removeCheckout(root);
  await removeCheckout(outside);
});

async function refusal(path: string): Promise<CapabilityError> {
  try {
    await resolveInside(root, path, { label: "input.path" });
  } catch (error) {
    if (CapabilityError.is(error)) return error;
    throw error;
  }
  throw new Error(`expected ${path} to be refused`);
}

describe("resolveInside", () => {
  test("resolveInside resolves paths inside the checkout, existing or not", async () => {
    expect(await resolveInside(root, ".")).toBe(root);
    expect(await resolveInside(root, "")).toBe(root);
    expect(await resolveInside(root, "src/a.txt")).toBe(join(root, "src/a.txt"));
    expect(await resolveInside(root, "src/../src/new/file.txt")).toBe(join(root, "src/new/file.txt"));
    expect(await resolveInside(root, "src-link/a.txt")).toBe(join(root, "src-link/a.txt"));
  });

  for (const [why, path, words] of [
    ["a .. escape", "..", "leads outside the checkout"],
    ["a deeper .. escape", "src/../../etc", "leads outside the checkout"],
    ["an absolute path", "/etc/passwd", "is absolute"],
    ["an absolute path inside the root", "/", "is absolute"],
    ["a symbolic link leading out", "out/x.txt", "through a symbolic link"],
    ["a dangling symbolic link leading out", "dangling", "through a symbolic link"],
    ["a NUL byte", "a\0b", "NUL"],
  ] as const) {
    test(`resolveInside refuses ${why} as invalid_input naming the path`, async () => {
      const error = await refusal(path);
      expect(error.code).toBe("invalid_input");
      expect(error.message).toStartWith(`input.path ${JSON.stringify(path)} `);
      expect(error.message).toContain(words);
      expect(error.context).toEqual({ path });
    });
  }
});

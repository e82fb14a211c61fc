import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import digest from "../../capabilities/files.digest.ts";
import verify from "../../capabilities/files.verify.ts";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { removeCheckout, tempCheckout, writeFiles } from "../_support/capability-fixtures.ts";
import { createTestContext, runHandler, TestCancellation } from "../_support/test-context.ts";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

async function failure(promise: Promise<unknown>): Promise<CapabilityError> {
  try {
    await promise;
  } catch (error) {
    if (CapabilityError.is(error)) return error;
    throw error;
  }
  throw new Error("expected the handler to fail with a CapabilityError");
}

let root: string;

/** Digests the checkout and writes the manifest into it, as a user would before verifying later. */
async function writeManifest(): Promise<void> {
  const output = await runHandler(digest, { exclude: ["*.sha256"] }, createTestContext({ root }).ctx);
  await writeFile(join(root, "manifest.sha256"), output.manifest);
}

beforeEach(async () => {
  root = await tempCheckout();
  await writeFiles(root, { "a.txt": "alpha\n", "src/b.ts": "export const b = 1;\n", "src/c.md": "# c\n", "odd\\name.txt": "odd" });
});

afterEach(async () => {
  await removeCheckout(root);
});

describe("files.verify", () => {
  test("files.verify accepts the manifest files.digest wrote (round trip)", async () => {
    await writeManifest();
    const t = createTestContext({ root });
    const output = await runHandler(verify, { manifest: "manifest.sha256" }, t.ctx);
    expect(output).toEqual({ files: 4, bytes: 6 + 20 + 4 + 3, ok: true });
    expect(t.diagnostics()).toEqual([]);
    expect(t.progress().map((p) => p.current)).toEqual([1, 2, 3, 4]);
  });

  test("files.verify reports a changed file with a diagnostic and fails verification_failed", async () => {
    await writeManifest();
    await writeFile(join(root, "src/b.ts"), "export const b = 2;\n");
    const t = createTestContext({ root });
    const error = await failure(runHandler(verify, { manifest: "manifest.sha256" }, t.ctx));
    expect(error.code).toBe("verification_failed");
    expect(error.context).toEqual({ files: 4, mismatched: 1, missing: 0, unreadable: 0, malformed: 0 });
    expect(error.message).toContain("1 changed");
    expect(t.diagnostics()).toEqual([
      expect.objectContaining({ severity: "error", code: "mismatch", file: "src/b.ts", message: expect.stringContaining(sha("export const b = 2;\n")) }),
    ]);
  });

  test("files.verify reports a missing file", async () => {
    await writeManifest();
    await rm(join(root, "src/c.md"));
    const t = createTestContext({ root });
    const error = await failure(runHandler(verify, { manifest: "manifest.sha256" }, t.ctx));
    expect(error.context).toMatchObject({ mismatched: 0, missing: 1 });
    expect(t.diagnostics()).toEqual([expect.objectContaining({ code: "missing", file: "src/c.md" })]);
  });

  test("files.verify with ignore_missing checks the listed files that are here and passes over the rest, as sha256sum --ignore-missing (a download of one binary against a release's SHA256SUMS)", async () => {
    await writeManifest();
    await rm(join(root, "src"), { recursive: true });
    const t = createTestContext({ root });
    const output = await runHandler(verify, { manifest: "manifest.sha256", ignore_missing: true }, t.ctx);
    expect(output).toEqual({ files: 2, bytes: 6 + 3, ok: true, missing: 2 });
    expect(t.diagnostics()).toEqual([]);
    // A file that is here and changed still fails.
    await writeFile(join(root, "a.txt"), "beta\n");
    const changed = createTestContext({ root });
    const error = await failure(runHandler(verify, { manifest: "manifest.sha256", ignore_missing: true }, changed.ctx));
    expect(error.context).toMatchObject({ mismatched: 1, missing: 0, absent: 2 });
    expect(changed.diagnostics()).toEqual([expect.objectContaining({ code: "mismatch", file: "a.txt" })]);
  });

  test("files.verify with ignore_missing fails when none of the listed files is here: nothing was verified", async () => {
    await writeFile(join(root, "SHA256SUMS"), `${sha("one")}  docket-linux-x64\n${sha("two")}  docket-darwin-arm64\n`);
    const t = createTestContext({ root });
    const error = await failure(runHandler(verify, { manifest: "SHA256SUMS", ignore_missing: true }, t.ctx));
    expect(error.code).toBe("verification_failed");
    expect(error.message).toContain("none of them here (ignore_missing)");
    expect(error.context).toMatchObject({ files: 2, missing: 0, absent: 2 });
    expect(t.diagnostics()).toEqual([expect.objectContaining({ severity: "error", code: "none_present", file: "SHA256SUMS", message: "None of the 2 files SHA256SUMS lists exists here, so nothing was verified" })]);
  });

  test("files.verify reports each malformed manifest line with its number", async () => {
    await writeFile(join(root, "m.sha256"), `${sha("alpha\n")}  a.txt\nnot a checksum line\n\n${"z".repeat(64)}  a.txt\n`);
    const t = createTestContext({ root });
    const error = await failure(runHandler(verify, { manifest: "m.sha256" }, t.ctx));
    expect(error.context).toMatchObject({ malformed: 2, mismatched: 0 });
    // The lines not read are no files listed: counted apart (a tester read "2 bad lines (of 1 file listed)").
    expect(error.message).toBe("m.sha256 does not match the checkout: 2 bad manifest lines; it lists 1 file; see the diagnostics");
    expect(t.diagnostics().map((d) => [d.code, d.file, d.line])).toEqual([
      ["malformed_line", "m.sha256", 2],
      ["malformed_line", "m.sha256", 4],
    ]);
  });

  test("files.verify accepts binary-mode and BSD tag lines", async () => {
    await writeFile(join(root, "m.sha256"), `${sha("alpha\n")} *a.txt\nSHA256 (src/c.md) = ${sha("# c\n").toUpperCase()}\n`);
    const output = await runHandler(verify, { manifest: "m.sha256" }, createTestContext({ root }).ctx);
    expect(output.files).toBe(2);
  });

  test("files.verify fails on a manifest that lists no files", async () => {
    await writeFile(join(root, "empty.sha256"), "\n");
    const t = createTestContext({ root });
    const error = await failure(runHandler(verify, { manifest: "empty.sha256" }, t.ctx));
    expect(error.code).toBe("verification_failed");
    expect(t.diagnostics()[0]).toMatchObject({ code: "empty_manifest" });
  });

  test("files.verify answers not_found for a manifest that does not exist", async () => {
    const error = await failure(runHandler(verify, { manifest: "nope.sha256" }, createTestContext({ root }).ctx));
    expect(error.code).toBe("not_found");
    expect(error.message).toContain('"nope.sha256"');
    expect(error.suggestion).toContain("files.digest");
  });

  test("files.verify refuses a manifest path outside the checkout", async () => {
    for (const manifest of ["../m.sha256", "/etc/passwd"]) {
      const error = await failure(runHandler(verify, { manifest }, createTestContext({ root }).ctx));
      expect(error.code).toBe("invalid_input");
      expect(error.message).toContain(JSON.stringify(manifest));
    }
  });

  test("files.verify refuses a listed path that leads outside the checkout, through .. or a link", async () => {
    const outside = await realpath(await mkdtemp(join(tmpdir(), "docket-outside-")));
    try {
      await writeFile(join(outside, "x"), "x");
      await symlink(join(outside, "x"), join(root, "link"));
      await writeFile(join(root, "m.sha256"), `${sha("x")}  ../x\n${sha("x")}  link\n${sha("x")}  /etc/hostname\n`);
      const t = createTestContext({ root });
      const error = await failure(runHandler(verify, { manifest: "m.sha256" }, t.ctx));
      expect(error.context).toMatchObject({ malformed: 3 });
      expect(t.diagnostics().map((d) => [d.code, d.line])).toEqual([
        ["path_refused", 1],
        ["path_refused", 2],
        ["path_refused", 3],
      ]);
    } finally {
      await removeCheckout(outside);
    }
  });

  test("files.verify stops when cancelled between files", async () => {
    await writeManifest();
    const t = createTestContext({ root, cancelWhen: (e) => e.type === "progress" && e.current === 1 });
    let error: unknown;
    await runHandler(verify, { manifest: "manifest.sha256" }, t.ctx).catch((e) => (error = e));
    expect(error).toBeInstanceOf(TestCancellation);
    expect(t.progress()).toHaveLength(1);
  });
});

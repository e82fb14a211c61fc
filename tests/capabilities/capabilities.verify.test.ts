import { afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import verify from "../../capabilities/capabilities.verify.ts";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { capabilitySource, removeCheckout, tempCheckout, useDocketModules, writeFiles } from "../_support/capability-fixtures.ts";
import { createTestContext, runHandler, TestCancellation } from "../_support/test-context.ts";

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

beforeAll(() => {
  useDocketModules();
});

beforeEach(async () => {
  root = await tempCheckout();
  await writeFiles(root, {
    "capabilities/good.one.ts": capabilitySource({ id: "good.one" }),
    "capabilities/good.two.ts": capabilitySource({ id: "good.two" }),
  });
});

afterEach(async () => {
  await removeCheckout(root);
});

describe("capabilities.verify", () => {
  test("capabilities.verify passes a folder of sound files, with progress per file", async () => {
    const t = createTestContext({ root });
    const output = await runHandler(verify, {}, t.ctx);
    expect(output).toEqual({
      files: 2,
      capabilities: [
        { file: "capabilities/good.one.ts", id: "good.one" },
        { file: "capabilities/good.two.ts", id: "good.two" },
      ],
      ok: true,
    });
    expect(t.progress().map((p) => [p.current, p.total, p.message])).toEqual([
      [1, 2, "capabilities/good.one.ts"],
      [2, 2, "capabilities/good.two.ts"],
    ]);
  });

  test("capabilities.verify reports one diagnostic per problem with file and line", async () => {
    await writeFiles(root, {
      "capabilities/bad_id.ts": capabilitySource({ id: "Bad.Id" }),
      "capabilities/wrong.name.ts": capabilitySource({ id: "right.name" }),
      "capabilities/has.date.ts": capabilitySource({ id: "has.date", output: "v.object({ at: v.date() })" }),
      "capabilities/bad.example.ts": capabilitySource({ id: "bad.example", extra: 'examples: [{ n: "x" }],' }),
      "capabilities/syntax.error.ts": 'import { capability } from "docket";\nexport default capability({\n  id: "syntax.error",,\n});\n',
      "more/good.one.ts": capabilitySource({ id: "good.one" }),
    });
    const t = createTestContext({ root });
    const error = await failure(runHandler(verify, { path: "more" }, t.ctx));
    expect(error.code).toBe("verification_failed");
    expect(error.context).toEqual({ files: 8, problems: 6 });
    const found = t.diagnostics().map((d) => [d.file, d.code, d.line ?? null]);
    expect(found).toEqual([
      ["capabilities/bad.example.ts", "bad_example", 11],
      ["capabilities/bad_id.ts", "bad_id", 5],
      ["capabilities/has.date.ts", "schema_not_convertible", 10],
      ["capabilities/syntax.error.ts", "import_failed", 3],
      ["capabilities/wrong.name.ts", "file_name_mismatch", 5],
      ["more/good.one.ts", "duplicate_id", null],
    ]);
    for (const d of t.diagnostics()) expect(d.severity).toBe("error");
    expect(t.diagnostics()[2]!.message).toContain("output.at");
    expect(t.diagnostics()[5]!.message).toContain("already declared by capabilities/good.one.ts");
  });

  test("capabilities.verify counts a file another declares the id of as not loading, in words that agree with the numbers", async () => {
    await writeFiles(root, { "more/good.one.ts": capabilitySource({ id: "good.one" }) });
    const t = createTestContext({ root });
    const error = await failure(runHandler(verify, { path: "more" }, t.ctx));
    expect(error.message).toBe("1 problem in the capability files (1 of 3 files does not load as it is); see the diagnostics");
  });

  test("capabilities.verify warns of capability files in a subfolder, which are never loaded, and still passes (tester S)", async () => {
    await writeFiles(root, {
      "capabilities/sub/sub.one.ts": capabilitySource({ id: "sub.one" }),
      "capabilities/sub/helper.ts": "export const x = 1;\n",
      "capabilities/_lib/lib.util.ts": "export const y = 2;\n",
      "capabilities/sub/sub.one.test.ts": "export {};\n",
    });
    const t = createTestContext({ root });
    expect(await runHandler(verify, {}, t.ctx)).toMatchObject({ files: 2, ok: true });
    expect(t.diagnostics().map((d) => [d.severity, d.code, d.file])).toEqual([["warning", "not_loaded", "capabilities/sub/sub.one.ts"]]);
    expect(t.diagnostics()[0]!.message).toContain("only files directly in capabilities/ are loaded");
  });

  test("capabilities.verify fails a misspelled optional field at its line, rather than passing a file whose field is ignored", async () => {
    await writeFiles(root, { "capabilities/t.typo.ts": capabilitySource({ id: "t.typo", extra: "cancelable: true, timeoutMs: 100," }) });
    const t = createTestContext({ root });
    const error = await failure(runHandler(verify, {}, t.ctx));
    expect(error.context).toEqual({ files: 3, problems: 2 });
    expect(t.diagnostics().map((d) => [d.file, d.code, d.line, d.message])).toEqual([
      ["capabilities/t.typo.ts", "bad_declaration", 11, '"cancelable" is not a declaration field. Did you mean "cancellable"?'],
      ["capabilities/t.typo.ts", "bad_declaration", 11, '"timeoutMs" is not a declaration field. Did you mean "timeout_ms"?'],
    ]);
  });

  test("capabilities.verify reads an edited file again", async () => {
    await writeFiles(root, { "capabilities/fix.me.ts": capabilitySource({ id: "fix.me", input: "v.object({ at: v.date() })" }) });
    await failure(runHandler(verify, {}, createTestContext({ root }).ctx));
    await writeFile(join(root, "capabilities/fix.me.ts"), capabilitySource({ id: "fix.me" }));
    const output = await runHandler(verify, {}, createTestContext({ root }).ctx);
    expect(output.files).toBe(3);
  });

  test("capabilities.verify passes a checkout with no capabilities folder, with a warning log", async () => {
    const empty = await tempCheckout();
    try {
      const t = createTestContext({ root: empty });
      const output = await runHandler(verify, {}, t.ctx);
      expect(output).toEqual({ files: 0, capabilities: [], ok: true });
      expect(t.logs()).toContainEqual(expect.objectContaining({ level: "warn" }));
    } finally {
      await removeCheckout(empty);
    }
  });

  test("capabilities.verify fails when a folder given with --capabilities is not there: mistyped, it passed by holding nothing (CLI tester)", async () => {
    const missing = await failure(runHandler(verify, {}, createTestContext({ root, host: { capability_folders: ["/nonexistent/caps"] } }).ctx));
    expect(missing.code).toBe("verification_failed");
    expect(missing.message).toBe("--capabilities /nonexistent/caps is not a folder, so nothing of it was verified");
  });

  test("capabilities.verify refuses a path outside the checkout or that is not a folder", async () => {
    expect((await failure(runHandler(verify, { path: "../x" }, createTestContext({ root }).ctx))).code).toBe("invalid_input");
    expect((await failure(runHandler(verify, { path: "/tmp" }, createTestContext({ root }).ctx))).code).toBe("invalid_input");
    const missing = await failure(runHandler(verify, { path: "nope" }, createTestContext({ root }).ctx));
    expect(missing.message).toContain('input.path "nope" is not a folder');
  });

  test("capabilities.verify does not check the same folder twice", async () => {
    const output = await runHandler(verify, { path: "capabilities" }, createTestContext({ root }).ctx);
    expect(output.files).toBe(2);
  });

  test("capabilities.verify stops between files when cancelled", async () => {
    const t = createTestContext({ root, cancelWhen: (e) => e.type === "progress" && e.current === 1 });
    const error = await runHandler(verify, {}, t.ctx).catch((e) => e);
    expect(error).toBeInstanceOf(TestCancellation);
    expect(t.progress()).toHaveLength(1);
    expect(verify.cancellable).toBe(true);
  });
});

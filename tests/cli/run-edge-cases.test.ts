import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docket, fromSource } from "./_harness.ts";

const SECRET = "SEKRET-tok-value";
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "docket-run-edges-"));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(
    join(root, "capabilities", "edge.bigint.ts"),
    `import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "edge.bigint", title: "BigInt", description: "Returns a BigInt.", effect: "read", input: v.object({}), output: v.any(), handler: () => 10n as unknown });\n`,
  );
  writeFileSync(
    join(root, "capabilities", "edge.secret.ts"),
    `import { capability, sensitive } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "edge.secret", title: "Secret", description: "Takes a token.", effect: "read", input: v.object({ token: sensitive(v.pipe(v.string(), v.regex(/^tok_/))), count: v.number() }), output: v.object({}), handler: () => ({}) });\n`,
  );
  writeFileSync(
    join(root, "capabilities", "lint.js.ts"),
    `import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "lint.js", title: "Lint JS", description: "An id that ends like a file name.", effect: "read", input: v.object({}), output: v.object({ linted: v.boolean() }), handler: () => ({ linted: true }) });\n`,
  );
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("docket run edge cases", () => {
  test("docket run of an id that ends like a file name (lint.js) runs that capability when no such file exists, and ./lint.js stays a file (authoring tester, session 41)", async () => {
    const byId = await docket(fromSource, ["run", "lint.js", "--format", "json"], { cwd: root });
    expect(byId.code).toBe(0);
    expect(JSON.parse(byId.stdout).output).toEqual({ linted: true });
    const asFile = await docket(fromSource, ["run", "./lint.js", "--format", "json"], { cwd: root });
    expect(asFile.code).toBe(2);
    expect(JSON.parse(asFile.stdout).failure.message).toContain("the file does not exist");
  });

  test("docket run of a handler returning a BigInt fails internal and exits 1 instead of hanging", async () => {
    const run = await docket(fromSource, ["run", "edge.bigint", "--format", "json"], { cwd: root });
    expect(run.code).toBe(1);
    const document = JSON.parse(run.stdout);
    expect(document.execution.state).toBe("failed");
    expect(document.failure).toMatchObject({ error_code: "internal", stage: "complete" });
  });

  test("docket run never quotes a sensitive value back in a validation failure, and still names the other problems' values", async () => {
    const run = await docket(fromSource, ["run", "edge.secret", "--format", "json", "--input", JSON.stringify({ token: SECRET, count: "ten" })], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stdout + run.stderr).not.toContain(SECRET);
    const { failure } = JSON.parse(run.stdout);
    expect(failure.message).toContain("input.token");
    expect(failure.message).toContain("not shown");
    expect(failure.message).toContain('"ten"');
  });

  test("docket run with a bad --deadline-ms and --format json prints one JSON document and exits 2", async () => {
    for (const value of ["abc", "1e3", "1500.7"]) {
      const run = await docket(fromSource, ["run", "edge.bigint", "--format", "json", "--deadline-ms", value], { cwd: root });
      expect({ value, code: run.code }).toEqual({ value, code: 2 });
      expect(JSON.parse(run.stdout).failure).toMatchObject({ error_code: "invalid_input" });
    }
  });

  test("docket run with a deadline longer than a timer can hold is refused, not fired at once", async () => {
    const run = await docket(fromSource, ["run", "edge.bigint", "--format", "json", "--deadline-ms", "99999999999999"], { cwd: root });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout).failure.message).toContain("2147483647");
  });
});

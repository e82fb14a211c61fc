// The compiled binary, alone: what a user downloads. Built once into a temporary folder.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { gitCommit } from "../../scripts/build.ts";
import { defineRunCases } from "./_run-cases.ts";
import { buildBinary, docket, fromBinary, removeTempDirs, tempCheckout, type DocketRunner } from "./_harness.ts";

let binary: DocketRunner;

beforeAll(async () => {
  binary = fromBinary(await buildBinary());
}, 180_000);

afterAll(removeTempDirs);

describe("docket run (compiled binary)", () => {
  defineRunCases(() => binary);
});

describe("the compiled binary", () => {
  test("docket --version prints package.json's version, the commit built and the target", async () => {
    const result = await docket(binary, ["--version"], { cwd: tempCheckout() });
    expect(result).toMatchObject({ code: 0, stdout: `docket ${pkg.version} (commit ${gitCommit()}, ${process.platform}-${process.arch})\n` });
  });

  test("a new user's flow: git init, docket new hello.greet, docket run hello.greet, with the binary alone", async () => {
    const checkout = tempCheckout();
    const created = await docket(binary, ["new", "hello.greet"], { cwd: checkout });
    expect(created.code).toBe(0);
    expect(created.stdout).toContain("capabilities/hello.greet.ts");
    expect(created.stdout).toContain(`docket run hello.greet --input '{"name":"Ada"}'`);
    expect(existsSync(join(checkout, "node_modules"))).toBe(false);
    const source = readFileSync(join(checkout, "capabilities", "hello.greet.ts"), "utf8");
    expect(source).toContain('from "docket"');

    const ran = await docket(binary, ["run", "hello.greet", "--input", '{"name":"Ada"}'], { cwd: checkout });
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({ greeting: "Hello, Ada!", letters: 3 });
    expect(ran.stderr).toContain("step spell — Spelling Ada");
    expect(ran.stderr).toContain("[3/3] Ada");
  });

  test("docket capabilities list from the binary lists the bundled built-ins", async () => {
    const result = await docket(binary, ["capabilities", "list", "--format", "json"], { cwd: tempCheckout() });
    expect(result.code).toBe(0);
    const ids = JSON.parse(result.stdout).capabilities.map((c: { id: string }) => c.id);
    expect(ids).toContain("health.report");
    expect(ids).toContain("files.digest");
  });

  test("docket run health.report from the binary runs a bundled built-in on a worker", async () => {
    const result = await docket(binary, ["run", "health.report", "--format", "json"], { cwd: tempCheckout() });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).execution.state).toBe("succeeded");
  });
});

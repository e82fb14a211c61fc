// The first five minutes: the README tour as written, in any checkout and in a checkout of docket
// itself; ids with a `-`; a "did you mean" for a mistyped command or capability.
import { afterAll, describe, expect, test } from "bun:test";
import { docket, fromSource, removeTempDirs, tempCheckout, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

describe("the README tour", () => {
  test("docket new hello.greet then docket run hello.greet works in a checkout of docket itself", async () => {
    // What `runtime/capability/builtins.ts` marks: this checkout's capabilities/ holds the built-ins.
    const fork = tempCheckout();
    writeFiles(fork, { "runtime/capability/builtins.ts": "export {};\n", "capabilities/files.digest.ts": "export default 1;\n" });
    expect((await docket(fromSource, ["new", "hello.greet"], { cwd: fork })).code).toBe(0);
    const ran = await docket(fromSource, ["run", "hello.greet", "--input", '{"name":"Ada"}', "--format", "json"], { cwd: fork });
    expect(ran.stderr).not.toContain("did not load");
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout).output).toEqual({ greeting: "Hello, Ada!", letters: 3 });
  });

  test("docket new accepts an id with a - inside a segment, and the file runs", async () => {
    const checkout = tempCheckout();
    const created = await docket(fromSource, ["new", "repo.lint-check"], { cwd: checkout });
    expect(created.code).toBe(0);
    expect(created.stdout).toContain("capabilities/repo.lint-check.ts");
    const ran = await docket(fromSource, ["run", "repo.lint-check", "--format", "json"], { cwd: checkout });
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout).output.greeting).toBe("Hello, world!");
  });

  test("docket new refuses an id that is not lower-case dotted, saying what is allowed", async () => {
    const result = await docket(fromSource, ["new", "repo.-lint"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('"repo.-lint" is not a capability id');
    expect(result.stderr).toContain("like hello.greet or repo.lint-check");
  });
});

describe("did you mean", () => {
  test("an unknown command names the closest one", async () => {
    const result = await docket(fromSource, ["capabilites", "list"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Unknown command "capabilites" for docket. Did you mean docket capabilities?');
  });

  test("an unknown sub-command names the closest one", async () => {
    const result = await docket(fromSource, ["executions", "lst"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Did you mean docket executions list?");
  });

  test("docket run of an unknown capability names the closest loaded id", async () => {
    const result = await docket(fromSource, ["run", "file.digest"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('No capability "file.digest" is loaded.');
    expect(result.stderr).toContain('Did you mean "files.digest"?');
  });

  test("docket capabilities show of an unknown id names the closest loaded id", async () => {
    const result = await docket(fromSource, ["capabilities", "show", "helth.report"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Did you mean "health.report"?');
  });
});

// The compiled binary, alone: what a user downloads. Built once into a temporary folder.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { gitCommit } from "../../scripts/build.ts";
import { defineRunCases } from "./_run-cases.ts";
import { buildBinary, docket, fromBinary, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles, type DocketRunner } from "./_harness.ts";

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
    const json = await docket(binary, ["--version", "--format", "json"], { cwd: tempCheckout() });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ version: pkg.version, commit: gitCommit(), target: `${process.platform}-${process.arch}`, runtime: null });
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

/** Reads a file of the checkout the careless way: fs.promises.readFile, on Bun's shared file threads. */
const FIFO_READ = `import { capability } from "docket";
import * as v from "valibot";
import { promises as fs } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "t.fifo",
  title: "Read a file",
  description: "Reads a file of the checkout asynchronously.",
  effect: "read",
  input: v.object({ name: v.string() }),
  output: v.object({ bytes: v.number() }),
  async handler({ name }, ctx) {
    return { bytes: (await fs.readFile(join(ctx.root, name), { signal: ctx.signal })).length };
  },
});
`;

describe.skipIf(process.platform !== "linux")("docket serve and handlers stuck in a read", () => {
  test("handlers stuck reading a FIFO nobody writes (fs.promises.readFile) do not stop direct calls, built-ins or imports of capability files: the binary's server has more file threads than a few stuck reads take (containment tester, session 45)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/t.fifo.ts": FIFO_READ, "note.txt": "twelve bytes" });
    expect(Bun.spawnSync(["mkfifo", join(checkout, "pipe")]).exitCode).toBe(0);
    const child = spawnDocket(binary, ["serve", "--port", "0", "--direct-deadline-ms", "300", "--grace-ms", "100"], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    const url = (await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    const json = { "Content-Type": "application/json" };
    const call = (name: string) => fetch(`${url}/api/v1/t/fifo`, { method: "POST", headers: json, body: JSON.stringify({ name }) });
    try {
      // Each stuck call is stopped at its deadline; its read holds a file thread for good (two were every thread there was).
      for (let i = 0; i < 4; i++) expect((await call("pipe")).status).toBe(504);
      const read = await call("note.txt");
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual({ bytes: 12 });
      expect((await fetch(`${url}/api/v1/health/report`, { method: "POST", headers: json, body: "{}" })).status).toBe(200);
      // An execution imports the file in a new worker: on the same threads.
      const started = await (await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: json, body: JSON.stringify({ capability: "t.fifo", input: { name: "note.txt" } }) })).json();
      let state = "";
      for (let i = 0; i < 200 && !["succeeded", "failed", "cancelled"].includes(state); i++) {
        await Bun.sleep(50);
        state = (await (await fetch(`${url}/api/v1/executions/get?id=${started.execution.id}`)).json()).state;
      }
      expect(state).toBe("succeeded");
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
  }, 60_000);
});

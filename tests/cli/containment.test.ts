// Hostile capability files against the compiled binary (docs/containment.md): a handler that
// spins, blocks on a FIFO, allocates without end or never finishes loading does not take the
// server, the direct lane or the other executions with it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, docket, fromBinary, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles, type DocketRunner } from "./_harness.ts";

const header = (id: string, rest: string) => `import { capability } from "docket";
import * as v from "valibot";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
export default capability({ id: "${id}", title: "${id}", description: "A hostile handler.", ${rest} });
`;

const HOSTILE = {
  // A busy loop that never looks at cancellation: only terminating its worker stops it.
  "capabilities/hostile.spin.ts": header("hostile.spin", `effect: "read", input: v.object({}), output: v.object({}), handler() { for (;;) {} }`),
  // Allocates without end, as careless code does.
  "capabilities/hostile.hog.ts": header(
    "hostile.hog",
    `effect: "read", input: v.object({}), output: v.object({}), handler() { const a: number[][] = []; while (true) a.push(new Array(1e6).fill(1)); }`,
  ),
  // Waits for its cancellation and leaves a mark when it comes.
  "capabilities/hostile.wait.ts": header(
    "hostile.wait",
    `effect: "read", cancellable: true, input: v.object({}), output: v.object({}),
     async handler(_input, ctx) {
       writeFileSync(join(ctx.root, "started.mark"), "");
       await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
       writeFileSync(join(ctx.root, "cancelled.mark"), "");
       throw ctx.progress.cancellation();
     }`,
  ),
  // Reads a FIFO no one writes to: blocked in the kernel, synchronously or on a pool thread.
  "capabilities/hostile.pipe.ts": header(
    "hostile.pipe",
    `effect: "read", cancellable: true, input: v.object({ sync: v.boolean() }), output: v.object({ bytes: v.number() }),
     async handler(input, ctx) {
       const path = join(ctx.root, "data", "pipe");
       writeFileSync(join(ctx.root, "pipe-" + input.sync + ".began"), "");
       const text = input.sync ? readFileSync(path, "utf8") : await Bun.file(path).text();
       return { bytes: text.length };
     }`,
  ),
  // Its top-level await never settles.
  "capabilities/hostile.hang.ts": `await new Promise(() => {});\n${header("hostile.hang", `effect: "read", input: v.object({}), output: v.object({}), handler: () => ({})`)}`,
  // Its top level never returns; only the server has it (--capabilities served-only).
  "served-only/hostile.loops.ts": `for (;;) {}\n${header("hostile.loops", `effect: "read", input: v.object({}), output: v.object({}), handler: () => ({})`)}`,
  // Ends the process only on the main thread: its trial in a worker passes, the server's own import refuses it.
  "served-only/hostile.mainexit.ts": `import { isMainThread } from "node:worker_threads";\nif (isMainThread) process.exit(4);\n${header("hostile.mainexit", `effect: "read", input: v.object({}), output: v.object({}), handler: () => ({})`)}`,
  "data/a.txt": "a\n",
};

const LIMITS = { DOCKET_LOAD_TIMEOUT_MS: "300", DOCKET_DIRECT_DEADLINE_MS: "2000", DOCKET_GRACE_MS: "200", DOCKET_WORKER_MEMORY_MB: "64" };

let runner: DocketRunner;
let checkout: string;

beforeAll(async () => {
  runner = fromBinary(await buildBinary());
  checkout = tempCheckout();
  writeFiles(checkout, HOSTILE);
  expect(Bun.spawnSync(["mkfifo", join(checkout, "data", "pipe")]).exitCode).toBe(0);
}, 120_000);

afterAll(removeTempDirs);

/** Waits for a condition the server makes true, looking every 25 ms, at most `tries` times. */
async function until<T>(look: () => Promise<T | null | undefined | false>, what: string, tries = 800): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const seen = await look();
    if (seen) return seen;
    await Bun.sleep(25);
  }
  throw new Error(`Gave up waiting for ${what}`);
}

describe("containment (compiled binary)", () => {
  test("a package whose timer pollutes Object.prototype after the file's trial passed is put back on the server's main thread: the other capabilities keep loading (third checking tester, session 38)", async () => {
    const polluted = tempCheckout();
    writeFiles(polluted, {
      "node_modules/lazy-poly/package.json": JSON.stringify({ name: "lazy-poly", version: "1.0.0", main: "index.js" }),
      // A package's timer is not the file's: its trial passes (docs/containment.md).
      "node_modules/lazy-poly/index.js": 'setTimeout(() => { Object.prototype.lazy = "x"; Array.prototype.lazyArr = 1; }, 400);\nmodule.exports = { ok: 1 };\n',
      "package.json": JSON.stringify({ name: "polluted", private: true, dependencies: { "lazy-poly": "1.0.0" } }),
      "capabilities/l.poly.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nimport "lazy-poly";\nexport default capability({ id: "l.poly", title: "Poly", description: "Imports a package that pollutes later.", effect: "read", input: v.object({}), output: v.object({ keys: v.array(v.string()) }), handler: () => { const keys: string[] = []; for (const k in {}) keys.push(k); return { keys }; } });\n',
      "capabilities/l.other.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "l.other", title: "Other", description: "Loads beside it.", effect: "read", input: v.object({ n: v.number() }), output: v.object({ n: v.number() }), handler: (input) => input });\n',
    });
    const child = spawnDocket(runner, ["serve", "--port", "0"], { cwd: polluted });
    const stderr = watchStream(child.stderr);
    try {
      const url = (await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
      await stderr.until(/added or replaced Object\.prototype\.lazy.* on the server's main thread after the file loaded .*docket put them back as the server began/);
      // A reload after it: every capability still converts and loads.
      writeFileSync(join(polluted, "capabilities", "l.other.ts"), `${readFileSync(join(polluted, "capabilities", "l.other.ts"), "utf8")}// saved\n`);
      await Bun.sleep(800);
      const listed = (await (await fetch(`${url}/api/v1/capabilities/list`)).json()) as { capabilities: Array<{ id: string }>; load_errors: unknown[] };
      expect(listed.load_errors).toEqual([]);
      expect(listed.capabilities.map((c) => c.id)).toEqual(expect.arrayContaining(["l.poly", "l.other", "health.report"]));
      expect((await (await fetch(`${url}/cockpit`)).status)).toBe(200);
      const other = await fetch(`${url}/api/v1/l/other`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"n":2}' });
      expect(await other.json()).toEqual({ n: 2 });
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 60_000);

  test("built-ins a file replaces on the server's main thread alone, or later, are put back and said: the server listens and its answers are its own (checking tester, session 44)", async () => {
    const tricky = tempCheckout();
    const cap = (id: string, top: string) => `${top}\nimport { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "${id}", title: "T", description: "d", effect: "read", input: v.object({}), output: v.object({ ok: v.boolean() }), handler: () => ({ ok: true }) });\n`;
    writeFiles(tricky, {
      // Its trial runs in a worker: the replacement is made on the main thread only.
      "capabilities/m.main.ts": cap("m.main", 'import { isMainThread } from "node:worker_threads";\nif (isMainThread) { JSON.parse = () => ({}); (Array.prototype as any).map = function () { return ["pwned"]; }; }'),
      // After its trial ended: a package's timer, which the trial cannot follow.
      "node_modules/later-poly/package.json": JSON.stringify({ name: "later-poly", version: "1.0.0", main: "index.js" }),
      "node_modules/later-poly/index.js": 'setTimeout(() => { const own = JSON.stringify; JSON.stringify = (value, ...rest) => (value && value.capabilities ? \'{"capabilities":["pwned"]}\' : own(value, ...rest)); }, 1500);\nmodule.exports = { ok: 1 };\n',
      "package.json": JSON.stringify({ name: "tricky", private: true, dependencies: { "later-poly": "1.0.0" } }),
      "capabilities/m.later.ts": cap("m.later", 'import "later-poly";'),
    });
    const child = spawnDocket(runner, ["serve", "--port", "0", "--store", "memory"], { cwd: tricky });
    const stderr = watchStream(child.stderr);
    try {
      const url = (await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
      const said = await stderr.until(/m\.main\.ts \(or a package it imports\) replaced .*JSON\.parse.* on docket's main thread when imported there .*docket put them back/);
      expect(said).toContain("Array.prototype.map");
      await stderr.until(/replaced JSON\.stringify on docket's main thread after the file loaded .*docket put them back/);
      const listed = (await (await fetch(`${url}/api/v1/capabilities/list`)).json()) as { capabilities: Array<{ id: string }> };
      expect(listed.capabilities.map((c) => c.id)).toEqual(expect.arrayContaining(["m.main", "m.later", "health.report"]));
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 60_000);

  test("serve starts despite a never-settling file and one whose top level never returns; the direct lane, other executions and the server survive spinning, blocking, vanishing and allocating handlers", async () => {
    const child = spawnDocket(runner, ["serve", "--port", "0", "--max-concurrent", "2", "--capabilities", "served-only"], { cwd: checkout, env: LIMITS });
    const stderr = watchStream(child.stderr);
    const url = (await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    const api = `${url}/api/v1`;
    const post = (path: string, body: unknown, init: RequestInit = {}) =>
      fetch(`${api}/${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), ...init });
    const start = async (capability: string, input: unknown = {}) => ((await (await post("executions/start", { capability, input })).json()) as any).execution.id as string;
    const terminal = (id: string) =>
      until(async () => {
        const snapshot = (await (await fetch(`${api}/executions/get?id=${id}`)).json()) as any;
        return ["succeeded", "failed", "cancelled"].includes(snapshot.state) ? snapshot : null;
      }, `${id} to end`);
    const healthy = async () => {
      const health = await fetch(`${api}/health/report`);
      expect(health.status).toBe(200);
      return (await health.json()) as any;
    };
    try {
      // The file that never finishes loading is a load error with its file; everything else started.
      await stderr.until(/hostile\.hang\.ts.*did not finish loading within 300 ms/);
      await stderr.until(/hostile\.loops\.ts.*did not finish loading within 300 ms when docket tried it in a worker first/);
      // A top level that ends only the main thread is refused there: a load error, the server up.
      await stderr.until(/hostile\.mainexit\.ts.*process\.exit\(4\) in capability code would end the docket server/);
      expect((await healthy()).load_errors).toBe(3);

      // A busy loop on the direct lane, by GET and by POST: 504 once the deadline and the grace
      // are over, and the direct lane answers the next call at once.
      for (const call of [() => fetch(`${api}/hostile/spin`), () => post("hostile/spin", {})]) {
        const stuck = await call();
        expect(stuck.status).toBe(504);
        expect(((await stuck.json()) as any).error).toMatchObject({ error_code: "deadline_exceeded", context: { deadline_ms: 2000, terminated: true } });
        await healthy();
      }

      // A client that goes away cancels its direct call.
      const leaving = new AbortController();
      const abandoned = fetch(`${api}/hostile/wait`, { signal: leaving.signal }).catch(() => "aborted");
      await until(async () => existsSync(join(checkout, "started.mark")), "the direct call to start");
      leaving.abort();
      expect(await abandoned).toBe("aborted");
      await until(async () => existsSync(join(checkout, "cancelled.mark")), "the abandoned direct call to be cancelled");
      await healthy();

      // Built-ins refuse a FIFO before reading it, naming the path.
      const digest = await fetch(`${api}/files/digest?path=data/pipe`);
      expect(digest.status).toBe(400);
      expect(((await digest.json()) as any).error.message).toContain('input.path "data/pipe" is a FIFO (named pipe), not a regular file');
      const verify = await post("files/verify", { manifest: "data/pipe" });
      expect(verify.status).toBe(400);
      expect(((await verify.json()) as any).error.message).toContain('Manifest "data/pipe" is a FIFO (named pipe)');
      expect((await terminal(await start("files.digest", { path: "data/pipe" }))).failure.error_code).toBe("invalid_input");

      // A handler blocked on the FIFO (on a pool thread, or in the kernel on its own thread) does
      // not stay cancelling: grace_ms after the cancel its worker is terminated.
      for (const sync of [false, true]) {
        const id = await start("hostile.pipe", { sync });
        // Begun, not only dispatched: a cancel before its handler begins ends it without running it.
        await until(async () => existsSync(join(checkout, `pipe-${sync}.began`)), `${id}'s handler to begin`);
        expect(((await (await post("executions/cancel", { id })).json()) as any).requested).toBe(true);
        expect(await terminal(id)).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled", context: { terminated: true } } });
      }

      // A handler allocating without end fails its own execution; the one beside it finishes.
      const hog = await start("hostile.hog");
      const beside = await start("executions.demonstrate", { steps: 3, delay_ms: 200 });
      expect(await terminal(hog)).toMatchObject({ state: "failed", failure: { error_code: "memory_exceeded", context: { limit_mb: 64 } } });
      expect(await terminal(beside)).toMatchObject({ state: "succeeded", failure: null });
      expect((await terminal(await start("files.digest", { path: "data/a.txt" }))).state).toBe("succeeded");
      await healthy();
      await stderr.until(/hostile\.hog grew past the memory limit of 64 MiB/);
    } finally {
      child.kill("SIGINT");
    }
    expect(await child.exited).toBe(0);
  }, 90_000);

  test("run starts despite a never-settling file, refuses that file by name, and fails an allocating handler with memory_exceeded", async () => {
    // A built-in that reads the checkout's capabilities loads every file, and names the one that never settles.
    const builtin = await docket(runner, ["run", "health.report", "--format", "json"], { cwd: checkout, env: LIMITS });
    expect(JSON.parse(builtin.stdout).execution.state).not.toBe("running");
    expect(builtin.stderr).toContain("hostile.hang.ts");
    expect(builtin.stderr).toContain("did not finish loading within 300 ms");
    // One that reads nothing of them loads none: the never-settling file is no part of its run.
    const digest = await docket(runner, ["run", "files.digest", "--input", '{"path":"data/a.txt"}', "--format", "json"], { cwd: checkout, env: LIMITS });
    expect(digest.code).toBe(0);
    expect(JSON.parse(digest.stdout).execution.state).toBe("succeeded");
    expect(digest.stderr).not.toContain("hostile.hang.ts");

    const hanging = await docket(runner, ["run", "./capabilities/hostile.hang.ts"], { cwd: checkout, env: LIMITS });
    expect(hanging.code).toBe(2);
    expect(hanging.stderr).toContain("did not finish loading within 300 ms");

    const verify = await docket(runner, ["run", "capabilities.verify", "--format", "json"], { cwd: checkout, env: LIMITS });
    expect(verify.code).toBe(1);
    expect(JSON.parse(verify.stdout).execution.diagnostics).toContainEqual(expect.objectContaining({ code: "load_timeout", file: "capabilities/hostile.hang.ts" }));

    const hog = await docket(runner, ["run", "hostile.hog", "--format", "json"], { cwd: checkout, env: LIMITS });
    expect(hog.code).toBe(1);
    expect(JSON.parse(hog.stdout).execution.failure).toMatchObject({ error_code: "memory_exceeded", context: { limit_mb: 64 } });
  }, 60_000);

  test("a file whose top level loops for ever or calls process.exit() is a load error of the CI step and of the listing, which neither hangs nor ends without a word", async () => {
    const team = tempCheckout();
    writeFiles(team, {
      "capabilities/bad.exits.ts": `process.exit(3);\n${header("bad.exits", `effect: "read", input: v.object({}), output: v.object({}), handler: () => ({})`)}`,
      "capabilities/bad.loops.ts": `while (true) {}\n${header("bad.loops", `effect: "read", input: v.object({}), output: v.object({}), handler: () => ({})`)}`,
      "capabilities/good.one.ts": header("good.one", `effect: "read", input: v.object({}), output: v.object({}), handler: () => ({})`),
    });
    const listed = await docket(runner, ["capabilities", "list", "--format", "json"], { cwd: team, env: LIMITS });
    expect(listed.code).toBe(0);
    const listing = JSON.parse(listed.stdout);
    expect(listing.capabilities.map((c: { id: string }) => c.id)).toContain("good.one");
    expect(listing.load_errors).toEqual([
      expect.objectContaining({ file: join(team, "capabilities", "bad.exits.ts"), kept_out: "import_failed", reason: expect.stringContaining("ended its thread (exit code 3)") }),
      expect.objectContaining({ file: join(team, "capabilities", "bad.loops.ts"), kept_out: "load_timeout", reason: expect.stringContaining("did not finish loading within 300 ms") }),
    ]);

    const verify = await docket(runner, ["run", "capabilities.verify", "--format", "json"], { cwd: team, env: LIMITS });
    expect(verify.code).toBe(1);
    const run = JSON.parse(verify.stdout).execution;
    expect(run.failure.error_code).toBe("verification_failed");
    expect(run.diagnostics.map((d: { code: string; file: string }) => [d.code, d.file])).toEqual([
      ["import_failed", "capabilities/bad.exits.ts"],
      ["load_timeout", "capabilities/bad.loops.ts"],
    ]);
  }, 60_000);

  test("a package whose child-process callback calls process.exit(0) once imported cannot end the listing with nothing written: the call is refused and said, the listing written whole (checking tester)", async () => {
    const team = tempCheckout();
    writeFiles(team, {
      "node_modules/exiter/package.json": JSON.stringify({ name: "exiter", version: "1.0.0", main: "index.js" }),
      // No timer of the file's: its trial passes, and the main thread's import starts the child.
      "node_modules/exiter/index.js": 'require("child_process").execFile("sleep", ["0.3"], () => process.exit(0));\nmodule.exports = { x: 1 };\n',
      "capabilities/uses.exiter.ts": `import { x } from "exiter";\n${header("uses.exiter", `effect: "read", input: v.object({}), output: v.object({ n: v.number() }), handler: () => ({ n: x })`)}`,
      // Slow to load after it: the callback comes while the listing is still being read.
      ...Object.fromEntries(["z.one", "z.two", "z.three"].map((id) => [`capabilities/${id}.ts`, `await Bun.sleep(300);\n${header(id, `effect: "read", input: v.object({}), output: v.object({}), handler: () => ({})`)}`])),
    });
    const listed = await docket(runner, ["capabilities", "list", "--format", "json"], { cwd: team, env: { ...LIMITS, DOCKET_LOAD_TIMEOUT_MS: "3000" } });
    expect(listed.stderr).toContain("process.exit(0) in capability code would end docket capabilities before its listing is written");
    const ids = (JSON.parse(listed.stdout) as { capabilities: Array<{ id: string }> }).capabilities.map((c) => c.id);
    expect(ids).toEqual(expect.arrayContaining(["uses.exiter", "z.one", "z.two", "z.three"]));
  }, 60_000);

  test("docket run of a capability whose top level loops for ever is a load error within load_timeout_ms, by id and by path, and SIGINT or SIGTERM meanwhile ends it at once", async () => {
    const team = tempCheckout();
    writeFiles(team, {
      // Leaves a mark before looping: a run that reached the mark is loading the file.
      "capabilities/team.loop.ts": `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(join(team, "loading.mark"))}, "");\nfor (;;) {}\n${header("team.loop", `effect: "read", input: v.object({}), output: v.object({}), handler: () => ({})`)}`,
    });
    for (const target of ["team.loop", "./capabilities/team.loop.ts"]) {
      const run = await docket(runner, ["run", target, "--format", "json"], { cwd: team, env: LIMITS });
      expect(run.code).toBe(2);
      expect(JSON.parse(run.stdout).execution).toBeNull();
      expect(run.stderr).toContain("did not finish loading within 300 ms");
    }
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      rmSync(join(team, "loading.mark"), { force: true });
      const child = spawnDocket(runner, ["run", "team.loop", "--format", "json"], { cwd: team, env: { ...LIMITS, DOCKET_LOAD_TIMEOUT_MS: "120000" } });
      await until(async () => existsSync(join(team, "loading.mark")), "the file's top level to begin");
      child.kill(signal);
      expect(await child.exited).toBe(130);
      expect(JSON.parse(await new Response(child.stdout).text()).failure).toMatchObject({ error_code: "cancelled" });
    }
  }, 60_000);

  test("docket run of a file whose top level calls process.exit(0) fails loudly instead of passing with nothing done (a script's leftover in a CI step)", async () => {
    const team = tempCheckout();
    writeFiles(team, { "capabilities/left.exit.ts": `process.exit(0);\n${header("left.exit", `effect: "write", input: v.object({}), output: v.object({}), handler: () => ({})`)}` });
    const run = await docket(runner, ["run", "left.exit", "--format", "json"], { cwd: team, env: LIMITS });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ execution: null, failure: { error_code: "invalid_input", context: { file: join(team, "capabilities", "left.exit.ts") } } });
    expect(run.stderr).toContain("Cannot run left.exit: capabilities/left.exit.ts loading the file ended its thread (exit code 0) when docket tried it in a worker first");
  }, 60_000);

  test("a handler's last lines before its process.exit() are its log: the reason a CI step exits for, its raw writes and the step it opened are kept (tester, session 34)", async () => {
    const team = tempCheckout();
    writeFiles(team, {
      "capabilities/left.exitlog.ts": header(
        "left.exitlog",
        `effect: "read", input: v.object({}), output: v.object({}),
         async handler(_input, ctx) {
           ctx.progress.step("check", "Check");
           console.log("L1"); console.log("L2"); console.error("FATAL: the config is missing");
           process.stderr.write("RAWERR\\n"); process.stdout.write("RAWOUT\\n"); console.log("L3 last");
           process.exit(2);
         }`,
      ),
    });
    const summary = join(team, "summary.md");
    const run = await docket(runner, ["run", "left.exitlog", "--format", "json"], { cwd: team, env: { ...LIMITS, GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary } });
    expect(run.code).toBe(1);
    const document = JSON.parse(run.stdout);
    expect(document.failure).toMatchObject({ error_code: "internal", context: { reason: "worker_lost", exit_code: 2 } });
    // No server: where the details are is this run's own stderr, in the document and the job's summary alike.
    expect(document.failure.suggestion).toContain("the correlation id finds what ended it in this run's log above (stderr)");
    expect(readFileSync(summary, "utf8")).toContain("this run's log above (stderr)");
    expect(readFileSync(summary, "utf8")).not.toContain("server's log");
    expect(document.execution.log.map((line: { message: string }) => line.message)).toEqual(["L1", "L2", "FATAL: the config is missing", "L3 last"]);
    expect(document.execution.steps).toMatchObject([{ id: "check", title: "Check" }]);
    const shown = await docket(runner, ["executions", "events", document.execution.id], { cwd: team, env: LIMITS });
    for (const text of ["RAWERR", "RAWOUT", "FATAL: the config is missing", "L3 last"]) expect(run.stderr + shown.stdout).toContain(text);
  }, 60_000);

  test("one SIGTERM (timeout, a CI runner, a container stop) or hang-up ends a run of a capability that is not cancellable after the grace, with its document and exit 130; one Ctrl-C only asks (tester, session 34)", async () => {
    const team = tempCheckout();
    writeFiles(team, {
      "capabilities/stuck.write.ts": header("stuck.write", `effect: "write", input: v.object({}), output: v.object({}), async handler(_input, ctx) { writeFileSync(join(ctx.root, "started.mark"), ""); await new Promise(() => {}); return {}; }`),
    });
    const started = join(team, "started.mark");
    const running = async (child: ReturnType<typeof spawnDocket>) => {
      for (let i = 0; i < 400 && !existsSync(started); i++) await Bun.sleep(25);
      expect(existsSync(started)).toBe(true);
      rmSync(started);
      return child;
    };
    const env = { ...LIMITS, DOCKET_GRACE_MS: "300" };
    const children: Array<ReturnType<typeof spawnDocket>> = [];
    const spawned = () => {
      const child = spawnDocket(runner, ["run", "stuck.write", "--format", "json"], { cwd: team, env });
      children.push(child);
      return child;
    };
    try {
      // Ctrl-C: the handler is asked, cannot hear it, and runs on until a second press.
      const asked = await running(spawned());
      const askedErr = watchStream(asked.stderr);
      asked.kill("SIGINT");
      await askedErr.until(/is not cancellable: .* runs to its end\. press Ctrl-C again to stop now/);
      await Bun.sleep(1000);
      expect(asked.exitCode).toBeNull();
      asked.kill("SIGINT");
      expect(await asked.exited).toBe(130);

      const terminated = await running(spawned());
      const stdout = new Response(terminated.stdout).text();
      const stderr = watchStream(terminated.stderr);
      terminated.kill("SIGTERM");
      await stderr.until(/runs to its end, or until SIGTERM's grace of 300 ms passes: then it is stopped\./);
      expect(await terminated.exited).toBe(130);
      expect(JSON.parse(await stdout)).toMatchObject({ execution: { state: "cancelled" }, failure: { error_code: "cancelled", outcome_certainty: "unknown", retryability: "manual_reconcile" } });

      // A hang-up (the terminal closed) the same: nobody is left to press again.
      const hungUp = await running(spawned());
      const hungErr = watchStream(hungUp.stderr);
      hungUp.kill("SIGHUP");
      await hungErr.until(/or until SIGHUP's grace of 300 ms passes: then it is stopped\./);
      expect(await hungUp.exited).toBe(130);
    } finally {
      for (const child of children) child.kill("SIGKILL");
    }
  }, 60_000);
});

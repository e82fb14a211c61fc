import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane, type BootedPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { terminalSnapshot } from "../_support/terminal.ts";

// A task whose capability's file fails while its worker imports it never began: its failure is
// the file's (a load error saying what the file did), at stage queue and not_applied, even for a
// write (docs/containment.md, "Take back what was never begun").

const EDGE = { actor: { kind: "http" as const }, request_id: "r-load-failure", trace_id: "0".repeat(32) };
const LOAD_TIMEOUT_MS = 300;
const MEMORY_MB = 64;

/**
 * What each file's top level does once `armed-<id>` exists beside it (so that the server's trial
 * load and its own import at boot pass): the worker's import then fails this way.
 */
const TOP_LEVELS: Record<string, string> = {
  throws: `throw new Error("top level refused");`,
  waits: `await new Promise((resolve) => setTimeout(resolve, 20_000));`,
  stalls: `appendFileSync(join(import.meta.dir, "..", "imports-stalls.txt"), "import\\n"); await new Promise(() => {});`,
  exits: `process.exit(3);`,
  loops: `for (;;) {}`,
  // Past the load time, but finished before the pool's own backstop (a second more) would act.
  slow: `const until = Date.now() + ${LOAD_TIMEOUT_MS + 450}; while (Date.now() < until) {}`,
  grows: `const held = []; for (let i = 0; i < 40; i++) held.push(Buffer.alloc(16 * 1024 * 1024, 1)); for (;;) {}`,
  // A package gone from node_modules, as after an uninstall while serving.
  uninstalled: `await import("docket-fake-uninstalled");`,
};

/** A write whose handler marks that it ran; its top level fails as TOP_LEVELS[id] once armed. */
const file = (id: string) => `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
if (existsSync(join(import.meta.dir, "armed-${id}"))) { ${TOP_LEVELS[id]} }
export default capability({
  id: "test.${id}",
  title: "Fails to load",
  description: "Its top level fails once armed.",
  effect: "write",
  input: v.object({}),
  output: v.object({}),
  handler(_input, ctx) {
    appendFileSync(join(ctx.root, "marks.txt"), "${id}\\n");
    return {};
  },
});
`;

/** Appends its input's tag to marks.txt: the lane ran the next execution. */
const MARK = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "test.mark",
  title: "Mark",
  description: "Appends a line.",
  effect: "write",
  input: v.object({ tag: v.string() }),
  output: v.object({}),
  handler(input, ctx) {
    appendFileSync(join(ctx.root, "marks.txt"), input.tag + "\\n");
    return {};
  },
});
`;

let root: string;
let plane: BootedPlane;
const capabilities = () => join(root, "capabilities");
const marks = () => (existsSync(join(root, "marks.txt")) ? readFileSync(join(root, "marks.txt"), "utf8").trim().split("\n") : []);

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-load-failure-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(capabilities());
  for (const id of Object.keys(TOP_LEVELS)) writeFileSync(join(capabilities(), `test.${id}.ts`), file(id));
  writeFileSync(join(capabilities(), "test.mark.ts"), MARK);
  // One execution worker: each test's next execution shows that the lane is free again.
  plane = await bootPlane({
    cwd: root,
    storeKind: "memory",
    limits: resolveLimits({ overrides: { max_concurrent: 1, load_timeout_ms: LOAD_TIMEOUT_MS, worker_memory_mb: MEMORY_MB } }),
    importFile: (path) => import(path),
    log: () => undefined,
  });
});

afterAll(async () => {
  await plane?.close();
  rmSync(root, { recursive: true, force: true });
});

/** Arms test.<id>, runs it with no deadline, and answers its terminal snapshot once the next execution on the lane ran too. */
async function runArmed(id: string): Promise<ExecutionSnapshot> {
  writeFileSync(join(capabilities(), `armed-${id}`), "");
  const started = plane.engine.start({ capability: `test.${id}`, input: {} }, EDGE).execution.id;
  const done = await terminalSnapshot(plane.store, started);
  const next = plane.engine.start({ capability: "test.mark", input: { tag: `after-${id}` } }, EDGE).execution.id;
  expect((await terminalSnapshot(plane.store, next)).state).toBe("succeeded");
  return done;
}

describe("a task whose file fails while its worker imports it", () => {
  test("a top level that throws fails it as the file's, at stage queue, not_applied, saying the class of what it threw", async () => {
    const done = await runArmed("throws");
    expect(done.state).toBe("failed");
    expect(done.failure).toMatchObject({ error_code: "internal", stage: "queue", outcome_certainty: "not_applied", retryability: "never", context: { reason: "load_failed", load: "threw" } });
    expect(done.failure!.message).toContain("test.throws did not run: its file failed while its worker imported it, before the handler began");
    // What it threw is the server log's (docs/security.md): the failure names its class and line.
    expect(done.failure!.message).toContain("it threw while loading: Error (line 5) (what it said is not shown to clients");
    expect(done.failure!.message).not.toContain("top level refused");
    expect(done.failure!.message).not.toContain("its handler threw");
  });

  test("a top-level await past load_timeout_ms fails it with that reason in its message, not only in the log", async () => {
    const done = await runArmed("waits");
    expect(done.failure).toMatchObject({ error_code: "internal", stage: "queue", outcome_certainty: "not_applied", retryability: "after_delay", context: { load: "load_timeout" } });
    expect(done.failure!.message).toContain(`did not finish loading within ${LOAD_TIMEOUT_MS} ms`);
  });

  test("a top-level await that never settles gets its worker replaced: the file's next task imports it anew", async () => {
    // Each import appends to imports-stalls.txt, then waits for ever.
    const imports = () => readFileSync(join(root, "imports-stalls.txt"), "utf8").trim().split("\n").length;
    const first = await runArmed("stalls");
    expect(first.failure).toMatchObject({ stage: "queue", context: { load: "load_timeout" } });
    expect(imports()).toBe(1);
    const second = await terminalSnapshot(plane.store, plane.engine.start({ capability: "test.stalls", input: {} }, EDGE).execution.id);
    expect(second.failure).toMatchObject({ stage: "queue", context: { load: "load_timeout" } });
    // The same worker would have waited on the first import, still pending, and not run the file again.
    expect(imports()).toBe(2);
  });

  test("a top level that ends its thread fails it as the file's exit, not a handler stopped", async () => {
    const done = await runArmed("exits");
    expect(done.failure).toMatchObject({ error_code: "internal", stage: "queue", outcome_certainty: "not_applied", retryability: "never", context: { load: "exited" } });
    expect(done.failure!.message).toContain("its top level ended the worker's thread (exit code 3)");
    expect(done.failure!.message).not.toContain("before the handler finished");
  });

  test("a synchronous loop at the top level, with no deadline, ends as a load timeout and frees its lane", async () => {
    const done = await runArmed("loops");
    expect(done.failure).toMatchObject({ error_code: "internal", stage: "queue", outcome_certainty: "not_applied", context: { load: "load_timeout" } });
    expect(done.failure!.message).toContain(`did not finish loading within ${LOAD_TIMEOUT_MS} ms`);
  });

  test("a synchronous top level that finishes past load_timeout_ms fails as a load timeout: its import settled late, its handler never runs", async () => {
    const done = await runArmed("slow");
    expect(done.failure).toMatchObject({ error_code: "internal", stage: "queue", outcome_certainty: "not_applied", context: { load: "load_timeout" } });
    expect(done.failure!.message).toContain(`did not finish loading within ${LOAD_TIMEOUT_MS} ms`);
  });

  test("a top level that outgrows the memory limit fails it memory_exceeded at stage queue, not_applied", async () => {
    const done = await runArmed("grows");
    expect(done.failure).toMatchObject({ error_code: "memory_exceeded", stage: "queue", outcome_certainty: "not_applied", context: { load: "memory_exceeded", limit_mb: MEMORY_MB } });
  });

  test("a top level whose package is not installed says how to install it, and that the file needs no change (authoring tester, session 41)", async () => {
    const done = await runArmed("uninstalled");
    expect(done.failure).toMatchObject({ stage: "queue", outcome_certainty: "not_applied", context: { load: "threw" } });
    expect(done.failure!.message).toContain("npm install docket-fake-uninstalled");
    expect(done.failure!.suggestion).toBe("Nothing ran. Do what the message says (install the package again, or put the module back), then start it again; the capability file needs no change.");
  });

  test("none of the failed loads ran its handler; the lane ran the next execution after each", () => {
    expect(marks()).toEqual(Object.keys(TOP_LEVELS).map((id) => `after-${id}`));
  });
});

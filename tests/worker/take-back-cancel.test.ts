import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane, type BootedPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { terminalSnapshot } from "../_support/terminal.ts";

// A cancel that reaches the pool after a worker gave up importing a file (its thread held by a
// previous handler's leftover) but before the pool read that verdict: the worker could no longer
// take the cancel, and the task must not be tried again elsewhere (docs/containment.md).
const EDGE = { actor: { kind: "http" as const }, request_id: "r-take-back-cancel", trace_id: "0".repeat(32) };
// Returns at once, leaving a timer that holds the thread 600 ms once the target file's top level ran.
const LEFTOVER = `import { capability } from "docket";
import * as v from "valibot";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
export default capability({ id: "test.leftover", title: "l", description: "l", effect: "write", input: v.object({ target: v.string() }), output: v.object({}),
  handler(input, ctx) {
    const poll = setInterval(() => {
      if (!existsSync(join(ctx.root, "tops.txt")) || !readFileSync(join(ctx.root, "tops.txt"), "utf8").includes(input.target)) return;
      clearInterval(poll);
      const end = Date.now() + 600; while (Date.now() < end) {}
    }, 2);
    return {};
  } });
`;
// A fine file: its top level awaits 50 ms. Its handler notes that it began.
const GOOD = (id: string, cancellable = true) => `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
if (existsSync(join(import.meta.dir, "armed-${id}"))) { appendFileSync(join(import.meta.dir, "..", "tops.txt"), "${id}\\n"); for (let i = 0; i < 6; i++) await Bun.sleep(20); }
export default capability({ id: "test.${id}", title: "g", description: "g", effect: "write", cancellable: ${cancellable}, input: v.object({}), output: v.object({}),
  handler(_i, ctx) { appendFileSync(join(ctx.root, "marks.txt"), "${id}\\n"); return {}; } });
`;
let root: string;
let plane: BootedPlane;
const logs: string[] = [];
beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-take-back-cancel-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "test.leftover.ts"), LEFTOVER);
  writeFileSync(join(root, "capabilities", "test.good.ts"), GOOD("good"));
  writeFileSync(join(root, "capabilities", "test.good2.ts"), GOOD("good2"));
  writeFileSync(join(root, "capabilities", "test.good3.ts"), GOOD("good3", false));
  plane = await bootPlane({ cwd: root, storeKind: "memory", limits: resolveLimits({ overrides: { max_concurrent: 1, load_timeout_ms: 300 } }), importFile: (p) => import(p), log: (l: unknown) => void logs.push(String(l)) });
});
afterAll(async () => { await plane?.close(); rmSync(root, { recursive: true, force: true }); });
const start = (c: string, input: unknown = {}) => plane.engine.start({ capability: c, input } as never, EDGE).execution.id;
const has = (name: string, what: string) => existsSync(join(root, name)) && readFileSync(join(root, name), "utf8").includes(what);

/**
 * Leaves the leftover aimed at `id`'s file, starts `id` (with `deadline_ms`, if given) and returns
 * once the worker gave up its import, held, with the main thread kept busy meanwhile (as a
 * server's may be): the verdict is posted, not read yet.
 */
async function inHeldWindow(id: string, deadline_ms?: number): Promise<string> {
  expect((await terminalSnapshot(plane.store, start("test.leftover", { target: id }))).state).toBe("succeeded");
  writeFileSync(join(root, "capabilities", `armed-${id}`), "");
  const execution = plane.engine.start({ capability: `test.${id}`, input: {}, ...(deadline_ms === undefined ? {} : { deadline_ms }) } as never, EDGE).execution.id;
  for (const end = Date.now() + 5000; !has("tops.txt", id) && Date.now() < end; ) await Bun.sleep(1);
  for (const end = Date.now() + 1000; Date.now() < end; ) {}
  return execution;
}

/** How `id`'s execution ended, once it did and a little more, and whether its handler ran. */
async function ending(id: string, execution: string): Promise<{ done: Awaited<ReturnType<typeof terminalSnapshot>>; ran: boolean }> {
  const done = await terminalSnapshot(plane.store, execution);
  await Bun.sleep(200);
  return { done, ran: has("marks.txt", id) };
}

test("a cancel that arrives after the worker gave up the import (held) but before the pool read it: the retry must not begin the handler", async () => {
  const id = await inHeldWindow("good");
  plane.engine.cancel(id, EDGE);
  const { done, ran } = await ending("good", id);
  expect(ran).toBe(false);
  expect(done.state).toBe("cancelled");
  expect(done.failure).toMatchObject({ stage: "queue", outcome_certainty: "not_applied" });
}, 20_000);

test("the same window with a deadline_ms instead of a cancel: never begun, deadline_exceeded", async () => {
  const id = await inHeldWindow("good2", 700);
  const { done, ran } = await ending("good2", id);
  expect(done.failure).toMatchObject({ error_code: "deadline_exceeded", outcome_certainty: "not_applied" });
  expect(ran).toBe(false);
}, 20_000);

test("the same window for a capability that cannot be cancelled: nothing of it ran, so the cancel takes it back all the same", async () => {
  const id = await inHeldWindow("good3");
  expect(plane.engine.cancel(id, EDGE)).toMatchObject({ requested: true, cancellable: false });
  const { done, ran } = await ending("good3", id);
  expect(ran).toBe(false);
  expect(done.state).toBe("cancelled");
  expect(done.failure).toMatchObject({ stage: "queue", outcome_certainty: "not_applied" });
  // The lane runs on.
  expect((await terminalSnapshot(plane.store, start("test.leftover", { target: "nothing" }))).state).toBe("succeeded");
}, 20_000);

import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane, type BootedPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { terminalSnapshot } from "../_support/terminal.ts";

// A previous handler's leftover that holds the thread once, for less than a fifth of the load time,
// while the next file's top level awaits: that file is not failed as its own (docs/containment.md,
// "Take back what was never begun").
const EDGE = { actor: { kind: "http" as const }, request_id: "r-single-hold", trace_id: "0".repeat(32) };
// Leaves a timer that, once the target's top level ran, waits 200 ms then holds the thread HOLD ms once.
const LEFTOVER = `import { capability } from "docket";
import * as v from "valibot";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
export default capability({ id: "test.leftover", title: "l", description: "l", effect: "write", input: v.object({ target: v.string(), hold: v.number() }), output: v.object({}),
  handler(input, ctx) {
    const poll = setInterval(() => {
      if (!existsSync(join(ctx.root, "tops.txt")) || !readFileSync(join(ctx.root, "tops.txt"), "utf8").includes(input.target)) return;
      clearInterval(poll);
      setTimeout(() => { const end = Date.now() + input.hold; while (Date.now() < end) {} }, 200);
    }, 2);
    return {};
  } });
`;
// A file whose top level awaits 20 ms at a time until 4.5 s of a 5 s load time have passed,
// counting at most 0.1 s of each wait: a loaded machine, whose sleeps run late, does not stretch it
// past its load time, while a hold of the thread (a leftover's) adds its whole length.
const FILE = (id: string) => `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
if (existsSync(join(import.meta.dir, "armed-${id}"))) { appendFileSync(join(import.meta.dir, "..", "tops.txt"), "${id}\\n"); let own = 0; let last = Date.now(); while (own < 4500) { await Bun.sleep(20); const now = Date.now(); own += Math.min(now - last, 100); last = now; } }
export default capability({ id: "test.${id}", title: "g", description: "g", effect: "write", input: v.object({}), output: v.object({}),
  handler(_i, ctx) { appendFileSync(join(ctx.root, "marks.txt"), "${id}\\n"); return {}; } });
`;
let root: string;
let plane: BootedPlane;
beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-single-hold-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "test.leftover.ts"), LEFTOVER);
  for (const id of ["alone", "victim"]) writeFileSync(join(root, "capabilities", `test.${id}.ts`), FILE(id));
  plane = await bootPlane({ cwd: root, storeKind: "memory", limits: resolveLimits({ overrides: { max_concurrent: 1, load_timeout_ms: 5000 } }), importFile: (p) => import(p), log: () => undefined });
});
afterAll(async () => { await plane?.close(); rmSync(root, { recursive: true, force: true }); });
const run = async (c: string, input: unknown = {}) => terminalSnapshot(plane.store, plane.engine.start({ capability: c, input } as never, EDGE).execution.id);

test("baseline: the file alone loads within load_timeout_ms", async () => {
  writeFileSync(join(root, "capabilities", "armed-alone"), "");
  expect((await run("test.alone")).state).toBe("succeeded");
}, 30_000);

test("a leftover that holds the thread once for 990 ms (under a fifth of 5 s): the file is not failed as its own, and runs once on a fresh worker", async () => {
  expect((await run("test.leftover", { target: "victim", hold: 990 })).state).toBe("succeeded");
  writeFileSync(join(root, "capabilities", "armed-victim"), "");
  const done = await run("test.victim");
  const tops = readFileSync(join(root, "tops.txt"), "utf8").trim().split("\n").filter((l) => l === "victim").length;
  expect(done.state).toBe("succeeded");
  // Its top level ran on the held worker, then on the fresh one; its handler once.
  expect(tops).toBe(2);
  expect(readFileSync(join(root, "marks.txt"), "utf8").trim().split("\n").filter((l) => l === "victim")).toEqual(["victim"]);
}, 30_000);

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane, type BootedPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { terminalSnapshot } from "../_support/terminal.ts";

// A task handed to a worker still busy with what a previous handler left running is taken back
// (docs/containment.md, "Take back what was never begun"), through the real engine: it runs once
// on a new worker, and a cancel or a deadline that came while it waited ends it as never begun.

const EDGE = { actor: { kind: "http" as const }, request_id: "r-take-back", trace_id: "0".repeat(32) };

/** Returns at once, leaving a timer that spins its worker's thread for input.ms. */
const LEAVE = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "test.leave",
  title: "Leave work behind",
  description: "Returns, leaving a spinning timer.",
  effect: "write",
  input: v.object({ ms: v.number() }),
  output: v.object({}),
  handler(input) {
    setTimeout(() => { const end = Date.now() + input.ms; while (Date.now() < end) {} }, 0);
    return {};
  },
});
`;

/** Appends its input's tag to marks.txt the instant it begins: how many times it ran. */
const MARK = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "test.mark",
  title: "Mark",
  description: "Appends a line when it begins.",
  effect: "write",
  cancellable: true,
  input: v.object({ tag: v.string() }),
  output: v.object({ tag: v.string() }),
  handler(input, ctx) {
    appendFileSync(join(ctx.root, "marks.txt"), input.tag + "\\n");
    return { tag: input.tag };
  },
});
`;

let root: string;
let plane: BootedPlane;

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-take-back-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "test.leave.ts"), LEAVE);
  writeFileSync(join(root, "capabilities", "test.mark.ts"), MARK);
  // One execution worker: the next task is handed to the worker the leftover keeps busy.
  plane = await bootPlane({ cwd: root, storeKind: "memory", limits: resolveLimits({ overrides: { max_concurrent: 1, grace_ms: 5000 } }), importFile: (path) => import(path), log: () => undefined });
});

afterAll(async () => {
  await plane?.close();
  rmSync(root, { recursive: true, force: true });
});

const terminal = (id: string): Promise<ExecutionSnapshot> => terminalSnapshot(plane.store, id);

const marks = () => (existsSync(join(root, "marks.txt")) ? readFileSync(join(root, "marks.txt"), "utf8").trim().split("\n") : []);

/** Leaves the only execution worker spinning for a minute, and waits until its timer runs. */
async function leaveWorkBehind(): Promise<void> {
  const id = plane.engine.start({ capability: "test.leave", input: { ms: 60_000 } }, EDGE).execution.id;
  expect((await terminal(id)).state).toBe("succeeded");
  await Bun.sleep(100);
}

describe("take-back", () => {
  test("the next execution on a worker kept busy by a leftover runs once, on a new worker", async () => {
    await leaveWorkBehind();
    const id = plane.engine.start({ capability: "test.mark", input: { tag: "ran" } }, EDGE).execution.id;
    const done = await terminal(id);
    expect(done.state).toBe("succeeded");
    expect(marks().filter((m) => m === "ran")).toEqual(["ran"]);
  });

  test("a cancel sent while it waited on the busy worker ends it cancelled, never begun, nothing applied", async () => {
    await leaveWorkBehind();
    const id = plane.engine.start({ capability: "test.mark", input: { tag: "cancelled" } }, EDGE).execution.id;
    await Bun.sleep(50);
    plane.engine.cancel(id, EDGE);
    const done = await terminal(id);
    expect(done.state).toBe("cancelled");
    expect(done.failure).toMatchObject({ error_code: "cancelled", outcome_certainty: "not_applied", retryability: "safe", context: { terminated: false } });
    expect(marks()).not.toContain("cancelled");
  });

  test("a deadline that passed while it waited on the busy worker fails it deadline_exceeded, never begun, nothing applied", async () => {
    await leaveWorkBehind();
    const id = plane.engine.start({ capability: "test.mark", input: { tag: "late" }, deadline_ms: 300 }, EDGE).execution.id;
    const done = await terminal(id);
    expect(done.state).toBe("failed");
    expect(done.failure).toMatchObject({ error_code: "deadline_exceeded", stage: "queue", outcome_certainty: "not_applied", retryability: "safe" });
    expect(marks()).not.toContain("late");
  });
});

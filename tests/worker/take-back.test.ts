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

/** Returns at once, leaving a timer that notes in leftovers.txt that it runs, then spins its worker's thread for input.ms. */
const LEAVE = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "test.leave",
  title: "Leave work behind",
  description: "Returns, leaving a spinning timer.",
  effect: "write",
  input: v.object({ ms: v.number() }),
  output: v.object({}),
  handler(input, ctx) {
    setTimeout(() => { appendFileSync(join(ctx.root, "leftovers.txt"), "spin\\n"); const end = Date.now() + input.ms; while (Date.now() < end) {} }, 0);
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

/** Returns at once, leaving a timer that notes in leftovers.txt that it runs, spins its worker's thread for 150 ms and then ends it. */
const EXIT_LATER = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "test.exitlater",
  title: "Exit later",
  description: "Returns, leaving a timer that ends its worker's thread.",
  effect: "write",
  input: v.object({}),
  output: v.object({}),
  handler(_input, ctx) {
    setTimeout(() => { appendFileSync(join(ctx.root, "leftovers.txt"), "exit\\n"); const end = Date.now() + 150; while (Date.now() < end) {} process.exit(5); }, 0);
    return {};
  },
});
`;

/** Returns at once, leaving a timer that ends its worker's thread input.ms later, without keeping the thread busy until then. */
const EXIT_SOON = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "test.exitsoon",
  title: "Exit soon",
  description: "Returns, leaving a timer that ends its worker's thread.",
  effect: "write",
  input: v.object({ ms: v.number() }),
  output: v.object({}),
  handler(input) {
    setTimeout(() => process.exit(6), input.ms);
    return {};
  },
});
`;

/** A file whose top level awaits 300 ms (once armed-slowtop exists: the main thread's own import at boot is quick), then marks when its handler begins. */
const SLOW_TOP = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
if (existsSync(join(import.meta.dir, "armed-slowtop"))) await new Promise((resolve) => setTimeout(resolve, 300));
export default capability({
  id: "test.slowtop",
  title: "Slow top level",
  description: "Awaits in its top level.",
  effect: "write",
  input: v.object({}),
  output: v.object({}),
  handler(_input, ctx) {
    appendFileSync(join(ctx.root, "marks.txt"), "slowtop\\n");
    return {};
  },
});
`;

/** A file whose top level awaits 1.5 s (once armed-slowtimed exists), longer than its timeout_ms; its handler marks that it ran and returns. */
const SLOW_TIMED = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
if (existsSync(join(import.meta.dir, "armed-slowtimed"))) await new Promise((resolve) => setTimeout(resolve, 1500));
export default capability({
  id: "test.slowtimed",
  title: "Slow top level, short timeout",
  description: "Awaits in its top level longer than its timeout_ms.",
  effect: "write",
  timeout_ms: 1000,
  input: v.object({}),
  output: v.object({}),
  handler(_input, ctx) {
    appendFileSync(join(ctx.root, "marks.txt"), "slowtimed\\n");
    return {};
  },
});
`;

/** Marks that it ran, with a timeout_ms shorter than the wait before a task is taken back from a busy worker. */
const TIMED_MARK = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "test.timedmark",
  title: "Timed mark",
  description: "Appends a line when it begins.",
  effect: "write",
  timeout_ms: 800,
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

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-take-back-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "test.leave.ts"), LEAVE);
  writeFileSync(join(root, "capabilities", "test.mark.ts"), MARK);
  writeFileSync(join(root, "capabilities", "test.exitlater.ts"), EXIT_LATER);
  writeFileSync(join(root, "capabilities", "test.exitsoon.ts"), EXIT_SOON);
  writeFileSync(join(root, "capabilities", "test.slowtop.ts"), SLOW_TOP);
  writeFileSync(join(root, "capabilities", "test.slowtimed.ts"), SLOW_TIMED);
  writeFileSync(join(root, "capabilities", "test.timedmark.ts"), TIMED_MARK);
  // One execution worker: the next task is handed to the worker the leftover keeps busy.
  plane = await bootPlane({ cwd: root, storeKind: "memory", limits: resolveLimits({ overrides: { max_concurrent: 1, grace_ms: 5000 } }), importFile: (path) => import(path), log: () => undefined });
});

afterAll(async () => {
  await plane?.close();
  rmSync(root, { recursive: true, force: true });
});

const terminal = (id: string): Promise<ExecutionSnapshot> => terminalSnapshot(plane.store, id);

const lines = (name: string) => (existsSync(join(root, name)) ? readFileSync(join(root, name), "utf8").trim().split("\n") : []);
const marks = () => lines("marks.txt");

/** Starts `capability` and waits for it to succeed and for the timer it leaves behind to run. */
async function leave(capability: string, input: unknown): Promise<void> {
  const before = lines("leftovers.txt").length;
  const id = plane.engine.start({ capability, input }, EDGE).execution.id;
  expect((await terminal(id)).state).toBe("succeeded");
  while (lines("leftovers.txt").length === before) await Bun.sleep(5);
}

/** Leaves the only execution worker spinning for a minute, its timer running. */
const leaveWorkBehind = () => leave("test.leave", { ms: 60_000 });

describe("take-back", () => {
  test("the next execution on a worker kept busy by a leftover runs once, on a new worker", async () => {
    await leaveWorkBehind();
    const id = plane.engine.start({ capability: "test.mark", input: { tag: "ran" } }, EDGE).execution.id;
    const done = await terminal(id);
    expect(done.state).toBe("succeeded");
    expect(marks().filter((m) => m === "ran")).toEqual(["ran"]);
  });

  test("the next execution handed to a worker that a leftover then ends, before it read the task, runs once on the new worker (not worker_lost)", async () => {
    await leave("test.exitlater", {});
    // Handed while the leftover spins, 150 ms before it ends the thread: the task is never read there.
    const id = plane.engine.start({ capability: "test.mark", input: { tag: "after-exit" } }, EDGE).execution.id;
    const done = await terminal(id);
    expect({ state: done.state, failure: done.failure }).toEqual({ state: "succeeded", failure: null } as never);
    expect(marks().filter((m) => m === "after-exit")).toEqual(["after-exit"]);
  });

  test("the next execution, whose file a leftover's timer ends the worker while it is imported, runs once on a new worker (not a failure of its file)", async () => {
    // A fresh worker, where nothing was left running: the one test.exitlater ended is gone.
    const fresh = plane.engine.start({ capability: "test.mark", input: { tag: "fresh" } }, EDGE).execution.id;
    expect((await terminal(fresh)).state).toBe("succeeded");
    const left = plane.engine.start({ capability: "test.exitsoon", input: { ms: 100 } }, EDGE).execution.id;
    expect((await terminal(left)).state).toBe("succeeded");
    // Received at once; its file's top level awaits 300 ms, during which the leftover's timer ends the thread.
    writeFileSync(join(root, "capabilities", "armed-slowtop"), "");
    const id = plane.engine.start({ capability: "test.slowtop", input: {} }, EDGE).execution.id;
    const done = await terminal(id);
    expect({ state: done.state, failure: done.failure }).toEqual({ state: "succeeded", failure: null } as never);
    expect(marks().filter((m) => m === "slowtop")).toEqual(["slowtop"]);
  });

  test("a timeout_ms counts from the handler's start: the next execution, its timeout_ms shorter than the wait before a take-back, runs once on a new worker", async () => {
    await leaveWorkBehind();
    const id = plane.engine.start({ capability: "test.timedmark", input: { tag: "timed-after-leftover" } }, EDGE).execution.id;
    const done = await terminal(id);
    expect({ state: done.state, failure: done.failure }).toEqual({ state: "succeeded", failure: null } as never);
    expect(marks().filter((m) => m === "timed-after-leftover")).toEqual(["timed-after-leftover"]);
  });

  test("a timeout_ms counts from the handler's start: a file whose top level awaits longer than it does not spend it", async () => {
    writeFileSync(join(root, "capabilities", "armed-slowtimed"), "");
    const id = plane.engine.start({ capability: "test.slowtimed", input: {} }, EDGE).execution.id;
    const done = await terminal(id);
    expect({ state: done.state, failure: done.failure }).toEqual({ state: "succeeded", failure: null } as never);
    expect(marks().filter((m) => m === "slowtimed")).toEqual(["slowtimed"]);
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

  test("a cancel of a capability that cannot be cancelled, sent while it waited on the busy worker, takes it back all the same: nothing of it ran", async () => {
    await leaveWorkBehind();
    const id = plane.engine.start({ capability: "test.leave", input: { ms: 0 } }, EDGE).execution.id;
    await Bun.sleep(50);
    expect(plane.engine.cancel(id, EDGE)).toMatchObject({ cancellable: false, requested: true, message: expect.stringContaining("taken back before its handler began") });
    const done = await terminal(id);
    expect(done.state).toBe("cancelled");
    expect(done.failure).toMatchObject({ error_code: "cancelled", stage: "queue", outcome_certainty: "not_applied" });
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

/**
 * A write whose top level, once `armed-<id>` exists in its folder (so that the main thread's own
 * import at boot is quick), writes `loading-<id>` and spins until `gate-<id>` exists: its worker is
 * still importing it. Its handler marks that it ran, then stops if it was cancelled meanwhile.
 */
const slowLoad = (id: string) => `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
const here = import.meta.dir;
if (existsSync(join(here, "armed-${id}"))) {
  writeFileSync(join(here, "loading-${id}"), "");
  const end = Date.now() + 20_000;
  while (!existsSync(join(here, "gate-${id}")) && Date.now() < end) {}
}
export default capability({
  id: "test.${id}",
  title: "Slow to load",
  description: "Spins in its top level until its gate opens.",
  effect: "write",
  cancellable: true,
  input: v.object({}),
  output: v.object({}),
  handler(_input, ctx) {
    appendFileSync(join(ctx.root, "marks.txt"), "${id} cancelled=" + ctx.progress.cancelled() + "\\n");
    if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
    return {};
  },
});
`;

// A cancel or a deadline that comes while the worker imports the capability's file takes the task
// back: its handler never runs, whatever the file's top level still does (docs/protocol.md,
// "Cancellation and deadlines").
describe("take-back while its worker prepares it", () => {
  const SLOW = ["cancelled", "late", "stuck"];
  let slowRoot: string;
  let slowPlane: BootedPlane;
  const capabilities = () => join(slowRoot, "capabilities");
  const slowMarks = () => (existsSync(join(slowRoot, "marks.txt")) ? readFileSync(join(slowRoot, "marks.txt"), "utf8").trim().split("\n") : []);

  /** Starts test.<id> and resolves once its worker is in the file's top level, its handler not begun. */
  async function startLoading(id: string, deadline?: number): Promise<string> {
    writeFileSync(join(capabilities(), `armed-${id}`), "");
    const started = slowPlane.engine.start({ capability: `test.${id}`, input: {}, ...(deadline === undefined ? {} : { deadline_ms: deadline }) }, EDGE).execution.id;
    while (!existsSync(join(capabilities(), `loading-${id}`))) await Bun.sleep(5);
    return started;
  }

  beforeAll(async () => {
    slowRoot = realpathSync(mkdtempSync(join(tmpdir(), "docket-take-back-load-")));
    mkdirSync(join(slowRoot, ".git"));
    mkdirSync(capabilities());
    for (const id of SLOW) writeFileSync(join(capabilities(), `test.${id}.ts`), slowLoad(id));
    writeFileSync(join(capabilities(), "test.mark.ts"), MARK);
    // A grace shorter than the load: a worker terminated after it would end the execution "stopped by force".
    slowPlane = await bootPlane({ cwd: slowRoot, storeKind: "memory", limits: resolveLimits({ overrides: { max_concurrent: 1, grace_ms: 300 } }), importFile: (path) => import(path), log: () => undefined });
  });

  afterAll(async () => {
    await slowPlane?.close();
    rmSync(slowRoot, { recursive: true, force: true });
  });

  test("a cancel while the file loads ends it cancelled at stage queue, not_applied; the handler never runs once the load ends", async () => {
    const id = await startLoading("cancelled");
    slowPlane.engine.cancel(id, EDGE);
    writeFileSync(join(capabilities(), "gate-cancelled"), "");
    const done = await terminalSnapshot(slowPlane.store, id);
    expect(done.state).toBe("cancelled");
    expect(done.failure).toMatchObject({ error_code: "cancelled", stage: "queue", outcome_certainty: "not_applied", retryability: "safe", context: { terminated: false } });
    // Run next on the same lane: had the handler run after the load, its mark came first.
    const next = slowPlane.engine.start({ capability: "test.mark", input: { tag: "after-cancelled" } }, EDGE).execution.id;
    expect((await terminalSnapshot(slowPlane.store, next)).state).toBe("succeeded");
    expect(slowMarks()).toEqual(["after-cancelled"]);
  });

  test("a deadline that passes while the file loads fails it deadline_exceeded at stage queue, not_applied", async () => {
    const id = await startLoading("late", 300);
    const done = await terminalSnapshot(slowPlane.store, id);
    writeFileSync(join(capabilities(), "gate-late"), "");
    expect(done.state).toBe("failed");
    expect(done.failure).toMatchObject({ error_code: "deadline_exceeded", stage: "queue", outcome_certainty: "not_applied", retryability: "safe" });
    const next = slowPlane.engine.start({ capability: "test.mark", input: { tag: "after-late" } }, EDGE).execution.id;
    expect((await terminalSnapshot(slowPlane.store, next)).state).toBe("succeeded");
    expect(slowMarks().filter((m) => m.startsWith("late"))).toEqual([]);
  });

  test("a worker stuck in the file's top level when its task is taken back does not hold the lane: the next execution runs", async () => {
    const id = await startLoading("stuck");
    slowPlane.engine.cancel(id, EDGE);
    const done = await terminalSnapshot(slowPlane.store, id);
    expect(done.failure).toMatchObject({ error_code: "cancelled", stage: "queue", outcome_certainty: "not_applied" });
    // The gate stays shut: only a new worker runs the next one.
    const next = slowPlane.engine.start({ capability: "test.mark", input: { tag: "after-stuck" } }, EDGE).execution.id;
    expect((await terminalSnapshot(slowPlane.store, next)).state).toBe("succeeded");
    expect(slowMarks().filter((m) => m.startsWith("stuck"))).toEqual([]);
  });
});

/** Returns at once, leaving behind, `after_ms` later, a timer that ends its worker's thread, spins, or rejects a promise nobody handles. */
const LEFTOVER = `import { capability } from "docket";
import * as v from "valibot";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "test.leftover",
  title: "Leave a leftover",
  description: "Returns, leaving a timer that misbehaves later.",
  effect: "write",
  input: v.object({ kind: v.picklist(["exit", "spin", "reject", "hold", "chunked"]), after_ms: v.number() }),
  output: v.object({}),
  handler(input, ctx) {
    if (input.kind === "hold") {
      // Once the next file's top level runs (and awaits), hold the thread a while past the load
      // time, though less than the pool's own margin beyond it.
      const poll = setInterval(() => {
        if (!existsSync(join(ctx.root, "tops.txt")) || !readFileSync(join(ctx.root, "tops.txt"), "utf8").includes("slow-hold")) return;
        clearInterval(poll);
        const end = Date.now() + 3300;
        while (Date.now() < end) {}
      }, 5);
      return {};
    }
    if (input.kind === "chunked") {
      // Once the next file's top level runs, hold the thread 45 ms at a time, every millisecond,
      // for 5 s: never long enough at once to make a timer more than 45 ms late.
      let started = 0;
      const slices = setInterval(() => {
        if (!started && (!existsSync(join(ctx.root, "tops.txt")) || !readFileSync(join(ctx.root, "tops.txt"), "utf8").includes("slow-chunked"))) return;
        started ||= Date.now();
        if (Date.now() - started > 5000) return clearInterval(slices);
        const end = Date.now() + 45;
        while (Date.now() < end) {}
      }, 1);
      return {};
    }
    setTimeout(() => {
      if (input.kind === "exit") process.exit(6);
      if (input.kind === "spin") { const end = Date.now() + 30_000; while (Date.now() < end) {} }
      if (input.kind === "reject") void Promise.reject(new Error("leftover boom"));
    }, input.after_ms);
    return {};
  },
});
`;

/**
 * Once armed-<id> exists, its top level notes in tops.txt that it runs, awaits 1 s and then 0.1 s
 * (slow-chunked: then 80 timers of 1 ms in a row, 0.1 s alone), then (exits) ends its thread; its
 * handler marks that it ran.
 */
const awaitingTop = (id: string, exits: boolean) => `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
if (existsSync(join(import.meta.dir, "armed-${id}"))) {
  appendFileSync(join(import.meta.dir, "..", "tops.txt"), "${id}\\n");
  await new Promise((resolve) => setTimeout(resolve, 1000));
  await new Promise((resolve) => setTimeout(resolve, 100));
  ${id === "slow-chunked" ? "for (let i = 0; i < 80; i++) await new Promise((resolve) => setTimeout(resolve, 1));" : ""}
  ${exits ? "process.exit(4);" : ""}
}
export default capability({
  id: "test.${id}",
  title: "Awaits in its top level",
  description: "Awaits a second as it loads.",
  effect: "write",
  input: v.object({}),
  output: v.object({}),
  handler(_input, ctx) {
    appendFileSync(join(ctx.root, "marks.txt"), "${id}\\n");
    return {};
  },
});
`;

// What a previous handler left running may end its worker, keep it busy or leave an error uncaught while the
// worker imports the next task's file (whose top-level await lets it run): that task never began,
// and is not blamed on its file — it runs on a fresh worker, where only its own file runs first
// (docs/containment.md, "Take back what was never begun").
describe("take-back of a task whose import a leftover failed", () => {
  let leftRoot: string;
  let leftPlane: BootedPlane;
  const file = (name: string) => join(leftRoot, name);
  const read = (name: string) => (existsSync(file(name)) ? readFileSync(file(name), "utf8").trim().split("\n") : []);

  beforeAll(async () => {
    leftRoot = realpathSync(mkdtempSync(join(tmpdir(), "docket-take-back-leftover-")));
    mkdirSync(join(leftRoot, ".git"));
    mkdirSync(file("capabilities"));
    writeFileSync(file("capabilities/test.leftover.ts"), LEFTOVER);
    writeFileSync(file("capabilities/test.mark.ts"), MARK);
    for (const id of ["slow-exit", "slow-spin", "slow-reject", "slow-hold", "slow-chunked"]) writeFileSync(file(`capabilities/test.${id}.ts`), awaitingTop(id, false));
    writeFileSync(file("capabilities/test.ownexit.ts"), awaitingTop("ownexit", true));
    leftPlane = await bootPlane({
      cwd: leftRoot,
      storeKind: "memory",
      limits: resolveLimits({ overrides: { max_concurrent: 1, load_timeout_ms: 3000, grace_ms: 300 } }),
      importFile: (path) => import(path),
      log: () => undefined,
    });
  });

  afterAll(async () => {
    await leftPlane?.close();
    rmSync(leftRoot, { recursive: true, force: true });
  });

  const run = async (capability: string, input: unknown) => terminalSnapshot(leftPlane.store, leftPlane.engine.start({ capability, input }, EDGE).execution.id);

  const doing = { exit: "ends the thread", spin: "keeps the thread busy past the load time", reject: "leaves a rejection unhandled", hold: "holds the thread past the load time, yet not past the pool's margin (the worker's own load timer fires late)", chunked: "holds the thread 45 ms at a time (the load timer never fires much late)" };
  for (const kind of ["exit", "spin", "reject", "hold", "chunked"] as const) {
    test(`a leftover that ${doing[kind]} while the next file is imported: that task runs once on a fresh worker, not failed as its file's`, async () => {
      const id = `slow-${kind}`;
      expect((await run("test.mark", { tag: `warm-${kind}` })).state).toBe("succeeded");
      expect((await run("test.leftover", { kind, after_ms: 100 })).state).toBe("succeeded");
      writeFileSync(file(`capabilities/armed-${id}`), "");
      const done = await run(`test.${id}`, {});
      expect({ state: done.state, failure: done.failure }).toEqual({ state: "succeeded", failure: null } as never);
      expect(read("marks.txt").filter((m) => m === id)).toEqual([id]);
      // Imported twice: on the worker the leftover failed, then on the fresh one.
      expect(read("tops.txt").filter((m) => m === id)).toEqual([id, id]);
    }, 20_000);
  }

  test("a file whose own top level ends its thread on a worker that ran other tasks is tried once more on a fresh worker, then fails as the file's", async () => {
    expect((await run("test.mark", { tag: "warm-own" })).state).toBe("succeeded");
    writeFileSync(file("capabilities/armed-ownexit"), "");
    const done = await run("test.ownexit", {});
    expect(done.state).toBe("failed");
    expect(done.failure).toMatchObject({ stage: "queue", outcome_certainty: "not_applied", context: { reason: "load_failed", load: "exited" } });
    expect(read("tops.txt").filter((m) => m === "ownexit")).toEqual(["ownexit", "ownexit"]);
    expect(read("marks.txt")).not.toContain("ownexit");
    // The lane goes on.
    expect((await run("test.mark", { tag: "after-own" })).state).toBe("succeeded");
  }, 20_000);
});

// A module-level variable keeps what one task put there for the next task on the same worker: a
// secret of one execution must not show in clear in another's texts (docs/containment.md,
// "Globals a handler sets"). Through the real engine and one worker.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane, type BootedPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { terminalSnapshot } from "../_support/terminal.ts";

const EDGE = { actor: { kind: "http" as const }, request_id: "r-cross", trace_id: "0".repeat(32) };

/** Keeps the last caller's token in a module-level variable, and prints the one before it every way a handler prints. */
const LEAKY = `import { capability, sensitive } from "docket";
import * as v from "valibot";
let previous = "none";
export default capability({
  id: "test.leaky", title: "Leaky client cache", description: "Logs the previous caller's token.", effect: "read",
  input: v.object({ token: sensitive(v.string()), fail: v.optional(v.boolean()) }),
  output: v.object({ ok: v.boolean() }),
  handler(input, ctx) {
    const was = previous;
    previous = input.token;
    ctx.progress.log("previous client: " + was);
    ctx.progress.step("s", "step for " + was);
    console.log("console: " + was);
    if (input.fail) throw new Error("failed with " + was);
    return { ok: true };
  },
});
`;

let root: string;
let plane: BootedPlane;
const logged: string[] = [];

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-cross-")));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "test.leaky.ts"), LEAKY);
  // One execution at a time: both tasks run on the same worker.
  plane = await bootPlane({ cwd: root, storeKind: "memory", limits: resolveLimits({ overrides: { max_concurrent: 1 } }), importFile: (path) => import(path), log: (line) => void logged.push(line) });
});

afterAll(async () => {
  await plane?.close();
  rmSync(root, { recursive: true, force: true });
});

const run = async (input: Record<string, unknown>) => {
  const { execution } = plane.engine.start({ capability: "test.leaky", input }, EDGE);
  const snapshot = await terminalSnapshot(plane.store, execution.id);
  const events = plane.store.events(execution.id, 0, 10_000)!.events as ExecutionEvent[];
  return { snapshot, text: JSON.stringify(events) + JSON.stringify(snapshot) };
};

test("what a task prints of an earlier task's secret that a module-level variable kept is masked: log, step, console and what it threw (containment tester, session 49)", async () => {
  const first = await run({ token: "FIRSTsecret111" });
  expect(first.snapshot.state).toBe("succeeded");
  expect(first.text).toContain("previous client: none");
  const second = await run({ token: "OTHERsecret222", fail: true });
  expect(second.snapshot.state).toBe("failed");
  expect(second.text.includes("FIRSTsecret111")).toBe(false);
  expect(second.text.includes("OTHERsecret222")).toBe(false);
  expect(second.text).toContain("previous client: [redacted]");
  expect(second.text).toContain("step for [redacted]");
  expect(second.text).toContain("console: [redacted]");
  // What it threw goes to the server's log, masked the same way.
  expect(logged.join("\n").includes("FIRSTsecret111")).toBe(false);
});

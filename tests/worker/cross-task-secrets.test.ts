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
const LEAKY = `import { capability, CapabilityError, sensitive } from "docket";
import * as v from "valibot";
let previous = "none";
export default capability({
  id: "test.leaky", title: "Leaky client cache", description: "Logs the previous caller's token.", effect: "read",
  input: v.object({ token: sensitive(v.string()), fail: v.optional(v.picklist(["error", "context"])) }),
  output: v.object({ ok: v.boolean() }),
  errors: ["leaky"],
  handler(input, ctx) {
    const was = previous;
    previous = input.token;
    ctx.progress.log("previous client: " + was);
    ctx.progress.step("s", "step for " + was);
    console.log("console: " + was);
    if (input.fail === "error") throw new Error("failed with " + was);
    if (input.fail === "context") throw new CapabilityError("leaky", "failed", { context: { token: was, nested: { auth: "Bearer " + was } } });
    return { ok: true };
  },
});
`;

/** Logs its caller's text, and writes it to stdout with no line end: what another task's secret would hold back or cut shows in its events. */
const ECHO = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "test.echo", title: "Echo", description: "Writes the text given.", effect: "read",
  input: v.object({ text: v.string() }), output: v.object({ ok: v.boolean() }),
  handler(input, ctx) { ctx.progress.log(input.text); process.stdout.write(input.text); return { ok: true }; },
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
  writeFileSync(join(root, "capabilities", "test.echo.ts"), ECHO);
  // One execution at a time: both tasks run on the same worker.
  plane = await bootPlane({ cwd: root, storeKind: "memory", limits: resolveLimits({ overrides: { max_concurrent: 1 } }), importFile: (path) => import(path), log: (line) => void logged.push(line) });
});

afterAll(async () => {
  await plane?.close();
  rmSync(root, { recursive: true, force: true });
});

const run = async (input: Record<string, unknown>, capability = "test.leaky") => {
  const { execution } = plane.engine.start({ capability, input }, EDGE);
  const snapshot = await terminalSnapshot(plane.store, execution.id);
  const events = plane.store.events(execution.id, 0, 10_000)!.events as ExecutionEvent[];
  return { snapshot, events, text: JSON.stringify(events) + JSON.stringify(snapshot) };
};

test("what a task prints of an earlier task's secret that a module-level variable kept is masked: log, step, console and what it threw (containment tester, session 49)", async () => {
  const first = await run({ token: "FIRSTsecret111" });
  expect(first.snapshot.state).toBe("succeeded");
  expect(first.text).toContain("previous client: none");
  const second = await run({ token: "OTHERsecret222", fail: "error" });
  expect(second.snapshot.state).toBe("failed");
  expect(second.text.includes("FIRSTsecret111")).toBe(false);
  expect(second.text.includes("OTHERsecret222")).toBe(false);
  expect(second.text).toContain("previous client: [redacted]");
  expect(second.text).toContain("step for [redacted]");
  expect(second.text).toContain("console: [redacted]");
  // What it threw goes to the server's log, masked the same way.
  expect(logged.join("\n").includes("FIRSTsecret111")).toBe(false);
});

test("another task's secret is masked only whole, and only a long one: no prefix of it is held back (a caller could read it out a letter at a time), no short one blanks other callers' words, and a CapabilityError's context is masked too (checking tester, session 49)", async () => {
  await run({ token: "Zq9-s3cr-LONG-1" });
  // A prefix of it is written whole, in one event: nothing was held back for it.
  const probe = await run({ text: "p Zq9-" }, "test.echo");
  const chunks = probe.events.filter((e) => e.type === "execution.stream").map((e) => (e.data as { chunk: string }).chunk);
  expect(chunks).toEqual(["p Zq9-"]);
  // The whole of it is masked.
  expect((await run({ text: "x Zq9-s3cr-LONG-1 y" }, "test.echo")).text).toContain("x [redacted] y");
  // Nor a start of it as a logger cuts a long text, nor as byte values (round-2 checking tester, session 49).
  const logged = async (text: string) => (await run({ text }, "test.echo")).events.filter((e) => e.type === "execution.log").map((e) => (e.data as { message: string }).message);
  expect(await logged("Zq9-s3cr'... 7 more characters")).toEqual(["Zq9-s3cr'... 7 more characters"]);
  const bytes = [..."Zq9-s3cr-L"].map((c) => c.charCodeAt(0)).join(",");
  expect(await logged(`bytes ${bytes}`)).toEqual([`bytes ${bytes}`]);
  // A short secret of another caller is no word of this one's.
  await run({ token: "main" });
  expect((await run({ text: "Switched to branch main" }, "test.echo")).text).toContain("Switched to branch main");
  // What a CapabilityError carries in its context, from a module-level leftover.
  await run({ token: "tok-AAAA-1111-secretvalue" });
  const failed = await run({ token: "whatever-else-1234", fail: "context" });
  expect(failed.snapshot.failure?.error_code).toBe("leaky");
  expect(failed.text.includes("tok-AAAA-1111-secretvalue")).toBe(false);
  expect(JSON.stringify(failed.snapshot.failure?.context)).toContain("Bearer [redacted]");
});

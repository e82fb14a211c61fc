import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { capability } from "../../runtime/capability/declaration.ts";
import { sensitive } from "../../runtime/capability/sensitive.ts";
import { createEngine, type Engine } from "../../runtime/execution/engine.ts";
import { FailureError } from "../../runtime/execution/failure.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { EdgeInfo } from "../../runtime/execution/plane.ts";
import { EVIDENCE_BYTES } from "../../runtime/execution/_reconcile-check.ts";
import { createMemoryStore } from "../../runtime/store/memory-store.ts";
import type { ExecutionStore } from "../../runtime/store/store.ts";
import { ManualClock } from "../_support/manual-clock.ts";
import { catalog, registered } from "../_support/registered.ts";
import { FakePool, flush } from "./_support/fake-pool.ts";

const EDGE: EdgeInfo = { actor: { kind: "http" }, request_id: "req-1", trace_id: "0af7651916cd43dd8448eb211c80319c" };
const PERSON: EdgeInfo = { actor: { kind: "cockpit" }, request_id: "req-2", trace_id: "0af7651916cd43dd8448eb211c80319d" };

const noop = async () => {
  throw new Error("test capabilities run on the fake pool, never here");
};
const check = () => ({ outcome: "applied" as const });

const CAPABILITIES = [
  registered(capability({ id: "demo.push", title: "Push", description: "A write that can check itself.", effect: "write", timeout_ms: 1000, input: v.object({ tag: v.string() }), output: v.object({}), handler: noop, reconcile: check })),
  registered(capability({ id: "demo.plain", title: "Plain", description: "A write without a check.", effect: "write", input: v.object({}), output: v.object({}), handler: noop })),
  registered(capability({ id: "demo.read", title: "Read", description: "A read.", effect: "read", input: v.object({}), output: v.object({}), handler: noop })),
  registered(
    capability({
      id: "demo.secret",
      title: "Secret",
      description: "A write whose input holds a token.",
      effect: "write",
      input: v.object({ repo: v.string(), token: sensitive(v.string()) }),
      output: v.object({}),
      handler: noop,
      reconcile: check,
    }),
  ),
  registered(
    capability({
      id: "demo.tagged",
      title: "Tagged",
      description: "A write whose input schema makes the tag something else.",
      effect: "write",
      input: v.pipe(v.object({ tag: v.string() }), v.transform((o) => ({ ref: `refs/tags/${o.tag}` }))),
      output: v.object({}),
      handler: noop,
      reconcile: check,
    }),
  ),
  registered(
    capability({
      id: "demo.renamed",
      title: "Renamed",
      description: "A write whose input schema moves its token.",
      effect: "write",
      input: v.pipe(v.object({ repo: v.string(), tok: sensitive(v.string()) }), v.transform((o) => ({ repo: o.repo, auth: { bearer: o.tok } }))),
      output: v.object({}),
      handler: noop,
      reconcile: check,
    }),
  ),
];

function setup(store?: ExecutionStore, capabilities = CAPABILITIES) {
  const limits = resolveLimits({ overrides: { grace_ms: 100 } });
  const clock = new ManualClock();
  const pool = new FakePool();
  const logged: string[] = [];
  const own = store ?? createMemoryStore({ limits, clock: () => clock.now() });
  const engine: Engine = createEngine({ registry: catalog(capabilities), store: own, pool, limits, root: "/checkout", storeKind: "memory", clock, log: (line) => logged.push(line) });
  return { engine, store: own, pool, clock, logged, plane: (edge = PERSON) => engine.handle(edge) };
}

type Setup = ReturnType<typeof setup>;

/** Starts `capability` and loses its worker: a write ends `internal` with an unknown outcome. */
async function lost(t: Setup, capabilityId: string, input: unknown): Promise<string> {
  const id = t.engine.start({ capability: capabilityId, input }, EDGE).execution.id;
  await flush();
  t.pool.of(id)!.end({ ok: false, error: { kind: "worker_lost", message: "gone" } });
  await flush();
  return id;
}

/** The reconcile task the engine handed the pool last. */
const checkTask = (t: Setup) => t.pool.tasks.filter((task) => task.task.entry === "reconcile").at(-1)!;

async function refusal(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    if (error instanceof FailureError) return error.failure;
    throw error;
  }
  throw new Error("expected a FailureError");
}

describe("executions.reconcile (engine)", () => {
  test("reconcile by hand records execution.reconciled after completed; the state stays, the snapshot shows it, release is allowed", async () => {
    const t = setup();
    const id = await lost(t, "demo.plain", {});
    const before = t.store.get(id)!;
    expect(before).toMatchObject({ state: "failed", failure: { outcome_certainty: "unknown" } });
    expect((await refusal(Promise.resolve().then(() => t.plane().release(id)))).message).toContain("reconciled");

    const receipt = await t.plane().reconcile({ id, outcome: "not_applied", note: "the branch was never pushed" });
    expect(receipt).toMatchObject({ id, state: "failed", reconciled: true, check: null, reconciliation: { outcome: "not_applied", method: "manual", actor: { kind: "cockpit" }, note: "the branch was never pushed" } });
    const after = t.store.get(id)!;
    expect(after.state).toBe("failed");
    expect(after.failure).toEqual(before.failure);
    expect(after.finished_at).toBe(before.finished_at);
    expect(after.last_sequence).toBe(before.last_sequence + 1);
    expect(after.reconciliation).toEqual({ ...receipt.reconciliation!, at: expect.any(String) });
    const last = t.store.events(id, before.last_sequence)!.events;
    expect(last.map((e) => [e.sequence, e.type])).toEqual([[before.last_sequence + 1, "execution.reconciled"]]);
    expect(last[0]!.data).toEqual({ outcome: "not_applied", method: "manual", actor: { kind: "cockpit" }, note: "the branch was never pushed" });
    expect(t.plane().release(id)).toEqual({ id, released: 0 });
    expect(t.logged.some((line) => line.includes(`${id} (demo.plain) reconciled as not_applied (manual) by cockpit`))).toBe(true);
  });

  test("reconcile refuses what has nothing to settle: a bad id, an unknown one, one still running, a known outcome, a second reconciliation", async () => {
    const t = setup();
    expect(await refusal(t.plane().reconcile({ id: "nope", outcome: "applied" }))).toMatchObject({ error_code: "invalid_input", stage: "validate" });
    expect(await refusal(t.plane().reconcile({ id: "x-20260908T010203Z-0a1b2c3d", outcome: "applied" }))).toMatchObject({ error_code: "not_found" });

    const running = t.engine.start({ capability: "demo.plain", input: {} }, EDGE).execution.id;
    await flush();
    expect(await refusal(t.plane().reconcile({ id: running, outcome: "applied" }))).toMatchObject({ error_code: "invalid_input", context: { reason: "not_finished", state: "running" } });
    t.pool.of(running)!.succeed({});
    await flush();
    const known = await refusal(t.plane().reconcile({ id: running, outcome: "applied" }));
    expect(known).toMatchObject({ error_code: "invalid_input", context: { reason: "outcome_known", state: "succeeded" } });
    expect(known.message).toContain("not unknown");

    // A read stopped by force changed nothing: not_applied, nothing to settle.
    const read = await lost(t, "demo.read", {});
    expect(t.store.get(read)!.failure!.outcome_certainty).toBe("not_applied");
    expect(await refusal(t.plane().reconcile({ id: read, outcome: "applied" }))).toMatchObject({ context: { reason: "outcome_known" } });

    const id = await lost(t, "demo.plain", {});
    await t.plane().reconcile({ id, outcome: "applied" });
    const again = await refusal(t.plane().reconcile({ id, outcome: "not_applied" }));
    expect(again).toMatchObject({ error_code: "invalid_input", context: { reason: "already_reconciled" } });
    expect(again.message).toContain("never replaced");
    expect(t.store.get(id)!.reconciliation!.outcome).toBe("applied");
  });

  test("executions.reconcile refusals of an execution that is not to be settled suggest what to do, not to correct the input", async () => {
    const t = setup();
    const running = t.engine.start({ capability: "demo.plain", input: {} }, EDGE).execution.id;
    await flush();
    const early = await refusal(t.plane().reconcile({ id: running, outcome: "applied" }));
    expect(early.suggestion).toBe(`Wait for it to end (docket executions events ${running} --follow); reconcile it then only if its outcome is unknown.`);
    t.pool.of(running)!.succeed({});
    await flush();
    expect((await refusal(t.plane().reconcile({ id: running, outcome: "applied" }))).suggestion).toBe("Nothing to do: its outcome is known already.");
    const id = await lost(t, "demo.plain", {});
    await t.plane().reconcile({ id, outcome: "applied" });
    const again = await refusal(t.plane().reconcile({ id, outcome: "applied" }));
    expect(again.suggestion).toBe(`Nothing to do: the first reconciliation stands (docket executions show ${id} shows it).`);
    for (const refused of [early, again]) expect(refused.suggestion).not.toContain("Correct the input");
  });

  test("reconcile without an outcome runs the capability's reconcile() on a worker and records its evidence", async () => {
    const t = setup();
    const id = await lost(t, "demo.push", { tag: "v1.2" });
    const pending = t.plane(EDGE).reconcile({ id });
    await flush();
    const task = checkTask(t);
    expect(task.task).toMatchObject({ capability: "demo.push", entry: "reconcile", input: { tag: "v1.2" }, execution: { id, attempt: 1 } });
    task.succeed({ outcome: "applied", evidence: { remote_tag: "v1.2", sha: "abc123" }, note: "the tag is on the remote" });
    const receipt = await pending;
    expect(receipt).toMatchObject({
      reconciled: true,
      check: { outcome: "applied", evidence: { remote_tag: "v1.2", sha: "abc123" } },
      reconciliation: { outcome: "applied", method: "check", actor: { kind: "http" }, note: "the tag is on the remote", evidence: { remote_tag: "v1.2", sha: "abc123" } },
    });
    expect(t.store.get(id)!.reconciliation!.evidence).toEqual({ remote_tag: "v1.2", sha: "abc123" });
  });

  test("reconcile records nothing when the check cannot tell, and a person can still settle it", async () => {
    const t = setup();
    const id = await lost(t, "demo.push", { tag: "v1" });
    const pending = t.plane().reconcile({ id });
    await flush();
    checkTask(t).succeed({ outcome: "unknown", evidence: { remote: "unreachable" } });
    const receipt = await pending;
    expect(receipt).toMatchObject({ reconciled: false, reconciliation: null, check: { outcome: "unknown", evidence: { remote: "unreachable" } } });
    expect(receipt.message).toContain("nothing was recorded");
    expect(t.store.get(id)!.reconciliation).toBeUndefined();
    expect((await t.plane().reconcile({ id, outcome: "applied" })).reconciled).toBe(true);
  });

  test("reconcile's check answers no more than is kept: a huge note is sanitized and cut as the stored one is, in the check and in the message quoting it", async () => {
    const t = setup();
    const limit = resolveLimits().diagnostic_message_bytes;
    const huge = `\x1b[2J\x1b[31mred\x1b[0m ${"x".repeat(2_000_000)}`;
    const unsureId = await lost(t, "demo.push", { tag: "v1" });
    let pending = t.plane().reconcile({ id: unsureId });
    await flush();
    checkTask(t).succeed({ outcome: "unknown", note: huge, evidence: { blob: "y".repeat(2_000_000) } });
    const unsure = await pending;
    expect(Buffer.byteLength(unsure.check!.note!)).toBeLessThanOrEqual(limit);
    expect(unsure.check!.note!.startsWith("red xxx")).toBe(true);
    expect(unsure.check!.note!.endsWith("…")).toBe(true);
    expect(unsure.check!.evidence).toMatchObject({ withheld: "too_large" });
    expect(unsure.message.length).toBeLessThan(limit + 1000);
    // The note twice (the check, the message), and the rest of the answer.
    expect(JSON.stringify(unsure).length).toBeLessThan(3 * limit);

    const appliedId = await lost(t, "demo.push", { tag: "v2" });
    pending = t.plane().reconcile({ id: appliedId });
    await flush();
    checkTask(t).succeed({ outcome: "applied", note: huge });
    const applied = await pending;
    // The answer shows what was recorded, not more.
    expect(applied.check!.note).toBe(t.store.get(appliedId)!.reconciliation!.note!);
    expect(applied.reconciliation!.note).toBe(applied.check!.note!);
  });

  test("reconcile's check: a wrong answer is internal, a thrown CapabilityError keeps its code, a hang hits the deadline, large evidence is withheld", async () => {
    const t = setup();
    const id = await lost(t, "demo.push", { tag: "v1" });

    let pending = t.plane().reconcile({ id });
    await flush();
    checkTask(t).succeed({ outcome: "maybe" });
    const wrong = await refusal(pending);
    expect(wrong).toMatchObject({ error_code: "internal", stage: "run" });
    expect(wrong.message).toContain('it must answer { outcome: "applied" | "not_applied" | "unknown"');

    pending = t.plane().reconcile({ id });
    await flush();
    checkTask(t).end({ ok: false, error: { kind: "capability", code: "remote_down", message: "the remote did not answer", context: {} } });
    expect(await refusal(pending)).toMatchObject({ error_code: "remote_down", message: "demo.push's reconcile() failed: the remote did not answer" });

    pending = t.plane().reconcile({ id });
    await flush();
    const hung = checkTask(t);
    t.clock.advance(1000);
    expect(hung.cancelRequested).toBe(true);
    t.clock.advance(100);
    expect(hung.terminated).toBe(true);
    expect(await refusal(pending)).toMatchObject({ error_code: "deadline_exceeded", context: { deadline_ms: 1000 } });

    pending = t.plane().reconcile({ id });
    await flush();
    checkTask(t).succeed({ outcome: "not_applied", evidence: { blob: "x".repeat(EVIDENCE_BYTES) } });
    const receipt = await pending;
    expect(receipt.reconciliation!.evidence).toEqual({ withheld: "too_large", bytes: JSON.stringify({ blob: "x".repeat(EVIDENCE_BYTES) }).length, limit: EVIDENCE_BYTES });
    expect(t.store.get(id)!.reconciliation).toMatchObject({ outcome: "not_applied", method: "check" });
  });

  test("reconcile's check runs with the real input this process kept, and says clearly when the secrets are gone", async () => {
    const t = setup();
    const id = await lost(t, "demo.secret", { repo: "docket", token: "s3cret-token" });
    expect(t.store.get(id)!.input).toEqual({ repo: "docket", token: "[redacted]" });
    const pending = t.plane().reconcile({ id });
    await flush();
    expect(checkTask(t).task.input).toEqual({ repo: "docket", token: "s3cret-token" });
    // A check that echoes the secret: it is masked before anything keeps or shows it.
    checkTask(t).succeed({ outcome: "unknown", evidence: { tried: "https://x:s3cret-token@host/docket" }, note: "token s3cret-token refused" });
    const unsure = await pending;
    expect(JSON.stringify(unsure)).not.toContain("s3cret-token");
    expect(unsure.check).toEqual({ outcome: "unknown", evidence: { tried: "https://x:[redacted]@host/docket" }, note: "token [redacted] refused" });
    const failing = t.plane().reconcile({ id });
    await flush();
    checkTask(t).end({ ok: false, error: { kind: "internal", error_class: "Error", message: "login with s3cret-token failed", stack: "Error: login with s3cret-token failed\n    at check" } });
    const failure = await refusal(failing);
    expect(JSON.stringify(failure)).not.toContain("s3cret-token");
    expect(t.logged.join("\n")).not.toContain("s3cret-token");
    expect(t.logged.join("\n")).toContain(failure.correlation_id);

    // Another process over the same store (a restart): the secret was never stored.
    const restarted = setup(t.store);
    const gone = await refusal(restarted.plane().reconcile({ id }));
    expect(gone).toMatchObject({ error_code: "not_runnable", context: { reason: "input_not_kept" } });
    expect(gone.message).toContain("sensitive fields, which are never stored");
    expect(gone.suggestion).toContain('"outcome":"applied"|"not_applied"');
    expect(restarted.pool.tasks.filter((task) => task.task.entry === "reconcile")).toHaveLength(0);
  });

  test("reconcile's check of a stored input gets what the input schema's transforms make of it, as the handler did", async () => {
    const t = setup();
    const id = await lost(t, "demo.tagged", { tag: "v1.2" });
    // Stored as sent (docs/security.md): what "Run again" fills the form with.
    expect(t.store.get(id)!.input).toEqual({ tag: "v1.2" });
    const pending = t.plane().reconcile({ id });
    await flush();
    expect(checkTask(t).task.input).toEqual({ ref: "refs/tags/v1.2" });
    checkTask(t).succeed({ outcome: "applied" });
    expect((await pending).reconciled).toBe(true);
  });

  test("reconcile's check masks a secret the input schema moved, in its evidence and note (tester: t.rename)", async () => {
    const t = setup();
    const id = await lost(t, "demo.renamed", { repo: "docket", tok: "moved-secret-9" });
    expect(t.store.get(id)!.input).toEqual({ repo: "docket", tok: "[redacted]" });
    const pending = t.plane().reconcile({ id });
    await flush();
    expect(checkTask(t).task.input).toEqual({ repo: "docket", auth: { bearer: "moved-secret-9" } });
    checkTask(t).succeed({ outcome: "unknown", evidence: { header: "Bearer moved-secret-9" }, note: "moved-secret-9 refused" });
    const unsure = await pending;
    expect(unsure.check).toEqual({ outcome: "unknown", evidence: { header: "Bearer [redacted]" }, note: "[redacted] refused" });
  });

  test("reconcile without an outcome is refused, before anything runs, for a capability without a check or not loaded", async () => {
    const t = setup();
    const id = await lost(t, "demo.plain", {});
    const none = await refusal(t.plane().reconcile({ id }));
    expect(none).toMatchObject({ error_code: "not_runnable", context: { reason: "no_reconcile" } });
    expect(none.message).toContain("declares no reconcile(input, ctx)");
    // A server whose checkout no longer has the capability file.
    const other = setup(t.store, CAPABILITIES.filter((c) => c.id !== "demo.plain"));
    expect(await refusal(other.plane().reconcile({ id }))).toMatchObject({ error_code: "not_runnable", context: { reason: "not_loaded" } });
    // By hand it still works: a person needs no code to say what they found.
    expect((await other.plane().reconcile({ id, outcome: "applied" })).reconciled).toBe(true);
    expect(t.pool.tasks.filter((task) => task.task.entry === "reconcile")).toHaveLength(0);
  });

  test("reconcile: a person who settles it while the check runs wins; the check's answer is then not recorded twice", async () => {
    const t = setup();
    const id = await lost(t, "demo.push", { tag: "v1" });
    const checking = t.plane(EDGE).reconcile({ id });
    await flush();
    expect((await refusal(t.plane(EDGE).reconcile({ id }))).context).toMatchObject({ reason: "check_running" });
    await t.plane().reconcile({ id, outcome: "not_applied", note: "checked by hand" });
    checkTask(t).succeed({ outcome: "applied" });
    expect(await refusal(checking)).toMatchObject({ error_code: "invalid_input", context: { reason: "already_reconciled" } });
    expect(t.store.get(id)!.reconciliation).toMatchObject({ outcome: "not_applied", method: "manual" });
    expect(t.store.events(id, 0)!.events.filter((e) => e.type === "execution.reconciled")).toHaveLength(1);
  });
});

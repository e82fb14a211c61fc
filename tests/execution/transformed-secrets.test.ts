import { describe, expect, test } from "bun:test";
import { canonicalHash } from "../../runtime/execution/canonical-json.ts";
import { FailureError } from "../../runtime/execution/failure.ts";
import { EDGE, harness } from "./_support/harness.ts";
import { flush } from "./_support/fake-pool.ts";

const stored = (h: ReturnType<typeof harness>, id: string) => JSON.stringify(h.store.events(id, 0, 1000)) + JSON.stringify(h.store.get(id));

/** Secrets whose input schema transforms them: redacted, hashed and masked as the client sent them (docs/security.md). */
describe("an input schema that transforms a secret", () => {
  test("engine.start stores a secret a transform moves redacted where it was sent, and the handler gets it moved (tester: t.rename)", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.renamed", input: { user: "bob", tok: "RenameSecret1" } }, EDGE).execution.id;
    // As sent: the default the check fills in is not part of it, and the secret is where the client put it.
    expect(h.store.get(id)!.input).toEqual({ user: "bob", tok: "[redacted]" });
    await flush();
    const task = h.pool.of(id)!;
    expect(task.task.input).toEqual({ user: "bob", tries: 3, auth: { bearer: "RenameSecret1" } });
    expect(task.task.secrets).toEqual(["RenameSecret1"]);
    task.end({ ok: false, error: { kind: "capability", code: "refused", message: "bearer RenameSecret1 refused", context: { header: "Bearer RenameSecret1" } } });
    await flush();
    expect(h.store.get(id)!.failure).toMatchObject({ message: "bearer [redacted] refused", context: { header: "Bearer [redacted]" } });
    expect(stored(h, id)).not.toContain("RenameSecret1");
  });

  test("engine.start's run identity of a moved secret leaves it out: another secret is the same run, never run_id_conflict (tester: t.rename)", () => {
    const h = harness();
    const first = h.engine.start({ capability: "demo.renamed", input: { user: "bob", tok: "RenameSecret1" }, run_id: "rename-1" }, EDGE);
    for (const tok of ["RenameSecret1", "WrongGuess22"]) {
      const again = h.engine.start({ capability: "demo.renamed", input: { user: "bob", tok }, run_id: "rename-1" }, EDGE);
      expect({ tok, deduplicated: again.deduplicated, id: again.execution.id }).toEqual({ tok, deduplicated: true, id: first.execution.id });
    }
    expect(h.store.findRun("rename-1")!.input_hash).toBe(canonicalHash({ user: "bob", tok: "[redacted]" }));
    // What is not secret still tells runs apart.
    expect(() => h.engine.start({ capability: "demo.renamed", input: { user: "eve", tok: "RenameSecret1" }, run_id: "rename-1" }, EDGE)).toThrow(FailureError);
  });

  test("engine.start hides a field whose schema parses it into an object holding a secret, and masks the secret inside it (tester: t.wrap)", async () => {
    const h = harness();
    const cfg = JSON.stringify({ token: "WrapSecret33" });
    const id = h.engine.start({ capability: "demo.wrapped", input: { user: "bob", cfg } }, EDGE).execution.id;
    expect(h.store.get(id)!.input).toEqual({ user: "bob", cfg: "[redacted]" });
    await flush();
    const task = h.pool.of(id)!;
    expect(task.task.input).toEqual({ user: "bob", cfg: { token: "WrapSecret33" } });
    // The text sent and the token the handler holds, which it may log alone.
    expect([...task.task.secrets!].sort()).toEqual([cfg, "WrapSecret33"].sort());
    task.succeed({ ok: true });
    await flush();
    expect(stored(h, id)).not.toContain("WrapSecret33");
  });

  test("a direct call masks a secret its input schema moved (tester: t.rename)", async () => {
    const h = harness();
    const call = h.engine.call("demo.renamed", { user: "bob", tok: "RenameSecret1" }, EDGE);
    await flush();
    expect(h.pool.tasks[0]!.task.secrets).toEqual(["RenameSecret1"]);
    h.pool.tasks[0]!.succeed({ ok: true });
    expect(await call).toEqual({ ok: true });
  });

  test("engine.start masks a secret that a default gave and a transform moved, at the top and inside a field (tester: s.envdef, s.defenv)", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.defaulted", input: { user: "bob" } }, EDGE).execution.id;
    await flush();
    const task = h.pool.of(id)!;
    expect(task.task.input).toEqual({ user: "bob", auth: { bearer: "DefaultSecret9", key: "NestedDefault7" } });
    expect([...task.task.secrets!].sort()).toEqual(["DefaultSecret9", "NestedDefault7"]);
    task.end({ ok: false, error: { kind: "capability", code: "refused", message: "bearer DefaultSecret9 key NestedDefault7 refused", context: {} } });
    await flush();
    expect(h.store.get(id)!.failure).toMatchObject({ message: "bearer [redacted] key [redacted] refused" });
    expect(stored(h, id)).not.toContain("DefaultSecret9");
  });

  test("engine.start masks a secret sent in place of the default, and only it (tester: s.defenv)", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.defaulted", input: { user: "bob", tok: "SentSecret55" } }, EDGE).execution.id;
    await flush();
    expect([...h.pool.of(id)!.task.secrets!].sort()).toEqual(["NestedDefault7", "SentSecret55"]);
  });
});

// The cockpit's answers that acknowledge something — "Run as execution" sending the browser to
// the new execution's page, Cancel saying the cancel was requested — come only once what they
// acknowledge is committed, as the API's do (docs/durability.md): a crash just after must not
// take back an execution whose page the cockpit showed, or a cancel it said it recorded.
import { describe, expect, test } from "bun:test";
import { createCockpit } from "../../cockpit/app.tsx";
import { BUSY_CREATIONS, COMMIT_GAP_MS } from "../../runtime/store/_sqlite-writer.ts";
import { EDGE } from "../execution/_support/harness.ts";
import { flush } from "../execution/_support/fake-pool.ts";
import { engineOnFile } from "../execution/_support/engine-on-file.ts";

/** A cockpit over an engine whose store writes only when the test moves its clock: busy, its last write created BUSY_CREATIONS executions. */
async function cockpitOnFile() {
  const h = engineOnFile(BUSY_CREATIONS + 1);
  const cockpit = createCockpit({ plane: h.engine, log: () => undefined });
  // The store's first write comes on the next turn; after a write that created this many, the
  // next waits for COMMIT_GAP_MS of the test's clock.
  const busy = Array.from({ length: BUSY_CREATIONS }, () => h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id);
  await flush();
  expect(busy.every((id) => h.store.creationCommitted(id))).toBe(true);
  return { ...h, cockpit, busy };
}

/** Whether `answer` has settled after a few turns of the event loop (no write of the store among them). */
async function settled(answer: Promise<unknown> | unknown): Promise<boolean> {
  let done = false;
  void Promise.resolve(answer).then(
    () => (done = true),
    () => (done = true),
  );
  await flush();
  return done;
}

describe("cockpit answers after commit", () => {
  test("Run as execution sends the browser to the execution's page only once its creation is committed", async () => {
    const h = await cockpitOnFile();
    try {
      const answer = h.cockpit.request("/capabilities/demo.read", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ mode: "start", "input.n": "2" }) });
      // Admitted, not yet committed (a crash now would leave no such execution): no answer yet.
      expect(await settled(answer)).toBe(false);
      h.clock.advance(COMMIT_GAP_MS);
      const response = await answer;
      expect(response.status).toBe(303);
      const id = response.headers.get("location")!.replace("/cockpit/executions/", "");
      expect(h.store.creationCommitted(id)).toBe(true);
      expect(h.store.get(id)).toMatchObject({ capability: "demo.read", input: { n: 2 } });
    } finally {
      await h.close();
    }
  });

  test("Cancel says the cancel was requested (its page's notice, a script's receipt) only once the request is committed", async () => {
    const h = await cockpitOnFile();
    try {
      // Two of the running ones: their creations are committed, and the store stays busy.
      const [scripted, posted] = h.busy as [string, string];
      const receipt = h.cockpit.request(`/executions/${scripted}/cancel`, { method: "POST", headers: { accept: "application/json" } });
      const form = h.cockpit.request(`/executions/${posted}/cancel`, { method: "POST" });
      expect(await settled(receipt)).toBe(false);
      expect(await settled(form)).toBe(false);
      h.clock.advance(COMMIT_GAP_MS);
      expect(await (await receipt).json()).toMatchObject({ id: scripted, requested: true, recorded: true, state: "cancelling" });
      expect((await form).headers.get("location")).toMatch(new RegExp(`^/cockpit/executions/${posted}\\?notice=[0-9a-f]{16}$`));
      expect(await (await h.cockpit.request((await form).headers.get("location")!.replace("/cockpit", ""))).text()).toContain("Cancel requested.");
      // What they acknowledged is in the file: what a restart reads.
      expect(h.store.get(scripted)!.state).toBe("cancelling");
      expect(h.store.get(posted)!.state).toBe("cancelling");
    } finally {
      await h.close();
    }
  });

  test("Cancel asked for JSON (the page's script) gets its refusals as JSON too: an unknown execution 404, a malformed id 400, never a page (checking tester)", async () => {
    const h = await cockpitOnFile();
    try {
      const unknown = await h.cockpit.request("/executions/x-20260101T000000Z-00000000/cancel", { method: "POST", headers: { accept: "application/json" } });
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get("content-type")).toContain("application/json");
      expect(((await unknown.json()) as { error: { error_code: string } }).error.error_code).toBe("not_found");
      const malformed = await h.cockpit.request("/executions/nope/cancel", { method: "POST", headers: { accept: "application/json" } });
      expect(malformed.status).toBe(400);
      expect(((await malformed.json()) as { error: { error_code: string; message: string } }).error).toMatchObject({ error_code: "invalid_input", message: expect.stringContaining("is not an execution id") });
      // A form post still gets the page.
      const page = await h.cockpit.request("/executions/nope/cancel", { method: "POST" });
      expect(page.headers.get("content-type")).toContain("text/html");
    } finally {
      await h.close();
    }
  });

  test("while the store cannot write, Cancel is asked of the handler and its page says it is not recorded yet, without waiting for the disk", async () => {
    const h = await cockpitOnFile();
    try {
      const id = h.busy[0]!;
      h.setFault({ reason: "database or disk is full", since: "2026-12-05T05:00:00.000Z" });
      const written = h.store.get(id)!;
      Object.assign(h.store, { get: (x: string) => (x === id ? written : null) });
      const form = h.cockpit.request(`/executions/${id}/cancel`, { method: "POST" });
      expect(await settled(form)).toBe(true);
      expect((await form).headers.get("location")).toMatch(new RegExp(`^/cockpit/executions/${id}\\?notice=[0-9a-f]{16}$`));
      expect(h.pool.of(id)!.cancelRequested).toBe(true);
    } finally {
      h.setFault(null);
      await h.close();
    }
  });
});

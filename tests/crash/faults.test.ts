// Faults against the compiled binary on the sqlite store (docs/durability.md): a frozen first
// server and a second one, a full disk, an oversized execution.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, docket, fromBinary, removeTempDirs } from "../cli/_harness.ts";
import { fillDisk, smallDisk } from "../store/_sqlite-durability.ts";
import { get, post, World, type Served } from "./_world.ts";

afterAll(removeTempDirs);

/** Polls another process (there is nothing here to await) until `condition` holds; bounded. */
async function until<T>(what: string, probe: () => Promise<T>, condition: (value: T) => boolean): Promise<T> {
  for (let tries = 0; tries < 1500; tries++) {
    const value = await probe();
    if (condition(value)) return value;
    await Bun.sleep(20);
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Every event of an execution, through the API. */
async function allEvents(url: string, id: string): Promise<any[]> {
  const events: any[] = [];
  for (let after = 0; ; ) {
    const page = await get(url, "executions.events", { id, after });
    if (page === null || page.events.length === 0) return events;
    events.push(...page.events);
    after = page.events.at(-1).sequence;
  }
}

function expectDense(events: any[]): void {
  expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
}

describe("durability faults, end to end", () => {
  test("a frozen first server (SIGSTOP) keeps its checkout: a second docket serve is refused at once, and after SIGCONT the first goes on with nothing lost", async () => {
    const world = new World(await buildBinary());
    let first: Served | null = await world.serve();
    try {
      const started = await post(first.url, "executions.start", { capability: "crash.write", input: { events: 50, tag: "frozen", hold_ms: 1500 }, run_id: "frozen-1" });
      const id: string = started.execution.id;
      await until("the write to run", () => get(first!.url, "executions.get", { id }), (s) => s?.state === "running");
      process.kill(first.pid, "SIGSTOP");
      let second;
      try {
        second = await docket(fromBinary(world.binary), ["serve", "--port", "0"], { cwd: world.root });
      } finally {
        process.kill(first.pid, "SIGCONT");
      }
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`Another docket server (pid ${first.pid}) already serves ${world.root}`);
      // The refused one opened nothing: the first one's lease and its running write are untouched.
      expect(JSON.parse(readFileSync(join(world.root, ".docket", "lease.json"), "utf8")).pid).toBe(first.pid);
      const done = await until("the write to finish", () => get(first!.url, "executions.get", { id }), (s) => s?.state === "succeeded");
      expect(done.failure).toBeNull();
      expectDense(await allEvents(first.url, id));
      expect(world.runCounts().byRunId.get("frozen-1")).toBe(1);
      // Private files, the store's log included; no shared-memory file.
      const dir = join(world.root, ".docket");
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      for (const file of ["lease.json", "serve.lock", "state.db", "state.db-wal"]) expect(statSync(join(dir, file)).mode & 0o777).toBe(0o600);
      expect(() => statSync(join(dir, "state.db-shm"))).toThrow();

      await first.kill();
      first = await world.serve();
      expect(await get(first.url, "executions.get", { id })).toMatchObject({ state: "succeeded", last_sequence: done.last_sequence });
    } finally {
      await first?.stop();
    }
  }, 60_000);

  test("a full disk (small tmpfs): a start it cannot write is refused at once and taken back, health says so, nothing accepted is lost, and it all recovers by itself when space returns", async () => {
    const disk = smallDisk("24m");
    if (disk === null) {
      console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
      return;
    }
    const root = join(disk.dir, "checkout");
    mkdirSync(join(root, ".git"), { recursive: true });
    const world = new World(await buildBinary(), root);
    // The disk fills under a store that is writing: no free-space floor to refuse first.
    const noFloor = ["--disk-free-floor-bytes", "0"];
    let served: Served | null = await world.serve(noFloor);
    try {
      const url = served.url;
      const before = await post(url, "executions.start", { capability: "crash.write", input: { events: 20, tag: "before" } });
      await until("the first write to finish", () => get(url, "executions.get", { id: before.execution.id }), (s) => s?.state === "succeeded");
      const filler = fillDisk(disk.dir);
      const start = { capability: "crash.write", input: { events: 300, tag: "full" }, run_id: "full-1" };
      const startOnce = () => fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(start), signal: AbortSignal.timeout(15_000) });
      // Its creation is in the write that fails: taken back and refused, never left unanswered.
      const withdrawn = await startOnce();
      expect(withdrawn.status).toBe(503);
      const error = ((await withdrawn.json()) as any).error;
      // Read before toMatchObject, which leaves its matchers in what it matched (Bun 1.4).
      const withdrawnId: string = error.context.withdrawn;
      expect(withdrawnId).toMatch(/^x-/);
      expect(error).toMatchObject({ error_code: "unavailable", outcome_certainty: "not_applied", context: { reason: "storage_fault" } });
      const health = await until("health to report the fault", () => fetch(`${url}/healthz`).then(async (r) => ({ status: r.status, body: await r.json() })), (h) => h.status === 503);
      expect(health.body).toMatchObject({ ok: false, store: { ok: false } });
      // New work is refused while the fault lasts.
      const refused = await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ capability: "crash.write", input: { events: 1, tag: "refused" } }) });
      expect(refused.status).toBe(503);

      unlinkSync(filler);
      await until("health to recover", () => fetch(`${url}/healthz`).then((r) => r.status), (status) => status === 200);
      const answered = await post(url, "executions.start", start);
      expect(answered).toMatchObject({ deduplicated: false, execution: { state: "queued" } });
      const id: string = answered.execution.id;
      expect(id).not.toBe(withdrawnId);
      const done = await until("the accepted write to finish", () => get(url, "executions.get", { id }), (s) => s?.state === "succeeded");
      await served.kill();
      served = await world.serve(noFloor);
      expect(await get(served.url, "executions.get", { id })).toMatchObject({ state: "succeeded", last_sequence: done.last_sequence });
      const events = await allEvents(served.url, id);
      expectDense(events);
      expect(events).toHaveLength(done.last_sequence);
      expect(await post(served.url, "executions.start", { capability: "crash.write", input: { events: 300, tag: "full" }, run_id: "full-1" })).toMatchObject({ deduplicated: true, execution: { id } });
      expect(world.runCounts().byRunId.get("full-1")).toBe(1);
      expect(await get(served.url, "executions.get", { id: withdrawnId })).toBeNull();
    } finally {
      await served?.stop().catch(() => undefined);
      disk.unmount();
    }
  }, 120_000);

  test("an oversized execution (1,000 step titles of 1 MB) ends alone, bounded or failed, never interrupted; the executions after it are written", async () => {
    const world = new World(await buildBinary());
    let served: Served | null = await world.serve();
    try {
      const url = served.url;
      const big = await post(url, "executions.start", { capability: "crash.big", input: {} });
      const later = [];
      for (const tag of ["after-1", "after-2"]) later.push(await post(url, "executions.start", { capability: "crash.write", input: { events: 10, tag } }));
      const end = await until("the big one to end", () => get(url, "executions.get", { id: big.execution.id }), (s) => s !== null && ["succeeded", "failed"].includes(s.state));
      if (end.state === "failed") expect(end.failure).toMatchObject({ error_code: "internal", stage: "complete" });
      for (const answer of later) await until("a later write to finish", () => get(url, "executions.get", { id: answer.execution.id }), (s) => s?.state === "succeeded");
      await served.kill();
      served = await world.serve();
      expect(await get(served.url, "executions.get", { id: big.execution.id })).toMatchObject({ state: end.state, last_sequence: end.last_sequence });
      for (const answer of later) expect(await get(served.url, "executions.get", { id: answer.execution.id })).toMatchObject({ state: "succeeded" });
    } finally {
      await served?.stop();
    }
  }, 120_000);
});

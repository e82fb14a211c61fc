// docs/protocol.md, "A run without a server": a `docket run --run-id` that finds no server keeps its
// run_id in the checkout (.docket/runs/), so that no later run with it — without a server, or
// through the server started next — runs the work a second time. Real processes, a real server.
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docket, fromSource, oneJsonDocument, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles } from "./_harness.ts";
import { api, pollUntil } from "./_report-support.ts";
import { rawUpgrade } from "../server/_support/raw-ws.ts";
import { claimRunIdLocally } from "../../runtime/cli/_run-id-claim.ts";
import { holdCheckoutShared, lockCheckout } from "../../runtime/server/checkout-lock.ts";

afterAll(removeTempDirs);

/**
 * A write capability that appends one line per run to `ran.txt` beside the checkout's files, and,
 * given `wait`, waits for a file of that name to appear first (a run held mid-way without a sleep).
 */
const COUNTED = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "demo.counted",
  title: "Counted",
  description: "Appends a line per run to ran.txt",
  effect: "write",
  input: v.object({ n: v.optional(v.number(), 1), wait: v.optional(v.string()) }),
  output: v.object({ n: v.number() }),
  async handler(input, ctx) {
    appendFileSync(join(ctx.root, "ran.txt"), "ran " + input.n + "\\n");
    while (input.wait && !existsSync(join(ctx.root, input.wait))) await new Promise((r) => setTimeout(r, 20));
    return { n: input.n };
  },
});
`;

/** A write that acts (a line in ran.txt), then fails not knowing whether its work took effect. */
const HALFWAY = `import { capability, CapabilityError } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "demo.halfway",
  title: "Halfway",
  description: "Acts, then fails with its outcome unknown",
  effect: "write",
  input: v.object({}),
  output: v.object({}),
  async handler(_input, ctx) {
    appendFileSync(join(ctx.root, "ran.txt"), "pushed\\n");
    throw new CapabilityError("push_failed", "the remote closed the connection after the push was sent", { retryability: "manual_reconcile" });
  },
});
`;

function countedCheckout(): string {
  const checkout = tempCheckout();
  writeFiles(checkout, { "capabilities/demo.counted.ts": COUNTED });
  return checkout;
}

/** `docket serve` (sqlite store, the default) in a process of its own; stop() ends it by SIGTERM and waits. */
async function serve(checkout: string): Promise<{ http: ReturnType<typeof api>; stop(): Promise<void> }> {
  const child = spawnDocket(fromSource, ["serve", "--port", "0", "--no-watch"], { cwd: checkout });
  const stop = async () => {
    child.kill("SIGTERM");
    await child.exited;
  };
  try {
    const banner = await watchStream(child.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
    return { http: api(banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

const runs = (checkout: string) => (existsSync(join(checkout, "ran.txt")) ? readFileSync(join(checkout, "ran.txt"), "utf8").split("\n").filter(Boolean).length : 0);
const run = (checkout: string, args: string[], env: Record<string, string> = {}) => docket(fromSource, ["run", "demo.counted", ...args], { cwd: checkout, env });

describe("docket run --run-id without a server", () => {
  test("a second run with the same run_id runs nothing and ends as the first did, deduplicated", async () => {
    const checkout = countedCheckout();
    const first = await run(checkout, ["--run-id", "deploy-1", "--input", '{"n":7}', "--format", "json"]);
    expect(first.code).toBe(0);
    expect(first.stderr).toContain("visible to this process alone (its run_id is kept in .docket/runs/)");
    const original = oneJsonDocument(first.stdout);
    const again = await run(checkout, ["--run-id", "deploy-1", "--input", '{"n":7}', "--format", "json"]);
    expect(again.code).toBe(0);
    const document = oneJsonDocument(again.stdout);
    expect(document.deduplicated).toBe(true);
    expect(document.execution.id).toBe(original.execution.id);
    expect(document.output).toEqual({ n: 7 });
    expect(again.stderr).toContain(`run_id deploy-1 was already used for ${original.execution.id} by a run without a server`);
    expect(runs(checkout)).toBe(1);
    // The mark is private, and named by the run_id's hash (a run_id may be "..").
    const [name] = readdirSync(join(checkout, ".docket", "runs"));
    expect(name).toMatch(/^[0-9a-f]{40}\.json$/);
  });

  test("the same run_id with another input is run_id_conflict, exit 2, and nothing runs", async () => {
    const checkout = countedCheckout();
    expect((await run(checkout, ["--run-id", "..", "--input", '{"n":1}'])).code).toBe(0);
    const other = await run(checkout, ["--run-id", "..", "--input", '{"n":2}', "--format", "json"]);
    expect(other.code).toBe(2);
    expect(oneJsonDocument(other.stdout).failure.error_code).toBe("run_id_conflict");
    expect(other.stderr).toContain('run_id ".." was already used for');
    expect(runs(checkout)).toBe(1);
  });

  test("a run with the run_id of one still running follows it to its end and never runs its own", async () => {
    const checkout = countedCheckout();
    const first = spawnDocket(fromSource, ["run", "demo.counted", "--run-id", "r-busy", "--input", '{"wait":"go"}'], { cwd: checkout, env: {} });
    let second: typeof first | null = null;
    try {
      await watchStream(first.stderr).until(/▸ demo\.counted/);
      second = spawnDocket(fromSource, ["run", "demo.counted", "--run-id", "r-busy", "--input", '{"wait":"go"}'], { cwd: checkout, env: {} });
      await watchStream(second.stderr).until(/is still running \(pid \d+\); following it to its end/);
      writeFileSync(join(checkout, "go"), "");
      const [a, b] = await Promise.all([first.exited, second.exited]);
      expect([a, b]).toEqual([0, 0]);
      expect(await new Response(second.stdout).text()).toContain('"n": 1');
      expect(runs(checkout)).toBe(1);
    } finally {
      // Never left waiting for a file that no failed test will write.
      for (const child of [first, second]) child?.kill("SIGKILL");
    }
  });

  test("a run with --deadline-ms that follows another run holding its run_id stops waiting once its deadline passes (exit 1), and the other run goes on", async () => {
    const checkout = countedCheckout();
    const first = spawnDocket(fromSource, ["run", "demo.counted", "--run-id", "r-late", "--input", '{"wait":"go"}'], { cwd: checkout, env: {} });
    let second: typeof first | null = null;
    try {
      await watchStream(first.stderr).until(/▸ demo\.counted/);
      second = spawnDocket(fromSource, ["run", "demo.counted", "--run-id", "r-late", "--input", '{"wait":"go"}', "--deadline-ms", "1500", "--format", "json"], { cwd: checkout, env: {} });
      const [code, stdout, stderr] = await Promise.all([second.exited, new Response(second.stdout).text(), new Response(second.stderr).text()]);
      expect(stderr).toContain("following it to its end");
      // A deadline's exit code (README.md, "run exit codes"): 1, as for a run whose own deadline passed.
      expect(code).toBe(1);
      const document = oneJsonDocument(stdout);
      expect(document.execution).toBeNull();
      expect(document.failure).toMatchObject({ error_code: "deadline_exceeded", retryability: "safe", context: { run_id: "r-late", deadline_ms: 1500 } });
      expect(document.failure.message).toContain("stopped waiting");
      expect(document.failure.message).toContain("goes on");
      expect(document.failure.suggestion).toContain("--run-id");
      expect(stderr).toContain("error deadline_exceeded: docket run stopped waiting for");
      // The other run was never stopped: it ends by itself, once, and its end is the run_id's.
      writeFileSync(join(checkout, "go"), "");
      expect(await first.exited).toBe(0);
      const after = await run(checkout, ["--run-id", "r-late", "--input", '{"wait":"go"}', "--format", "json"]);
      expect(after.code).toBe(0);
      expect(oneJsonDocument(after.stdout)).toMatchObject({ deduplicated: true, output: { n: 1 } });
      expect(runs(checkout)).toBe(1);
    } finally {
      for (const child of [first, second]) child?.kill("SIGKILL");
    }
    // Three runs one after the other, the second waiting out its deadline.
  }, 20_000);

  test("a run whose process was killed mid-run leaves an unknown outcome: a retry runs nothing and says so", async () => {
    const checkout = countedCheckout();
    const first = spawnDocket(fromSource, ["run", "demo.counted", "--run-id", "r-killed", "--input", '{"wait":"never"}'], { cwd: checkout, env: {} });
    try {
      // Killed once its handler has begun its work (the line is its first effect).
      await pollUntil(async () => runs(checkout), (n) => n === 1, "the first run's handler to begin");
    } finally {
      first.kill("SIGKILL");
      await first.exited;
    }
    const retry = await run(checkout, ["--run-id", "r-killed", "--input", '{"wait":"never"}', "--format", "json"]);
    expect(retry.code).not.toBe(0);
    const document = oneJsonDocument(retry.stdout);
    expect(document.failure.outcome_certainty).toBe("unknown");
    expect(document.failure.retryability).toBe("never");
    expect(document.failure.message).toContain("ended without writing how it ended");
    expect(runs(checkout)).toBe(1);
  });

  test("a failed end of unknown outcome read back from a mark says what a person can do, not to reconcile it at a server that never held it", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/demo.halfway.ts": HALFWAY });
    const first = await docket(fromSource, ["run", "demo.halfway", "--run-id", "r-half", "--format", "json"], { cwd: checkout, env: {} });
    expect(first.code).toBe(1);
    const again = await docket(fromSource, ["run", "demo.halfway", "--run-id", "r-half", "--format", "json"], { cwd: checkout, env: {} });
    expect(again.code).toBe(1);
    const document = oneJsonDocument(again.stdout);
    expect(document.deduplicated).toBe(true);
    expect(document.execution.id).toBe(oneJsonDocument(first.stdout).execution.id);
    expect(document.failure).toMatchObject({ error_code: "push_failed", outcome_certainty: "unknown" });
    for (const [said, suggestion] of [
      [again.stderr, document.failure.suggestion],
      // The run that failed says so too: no server ever held its execution either.
      [first.stderr, oneJsonDocument(first.stdout).failure.suggestion],
    ]) {
      expect(said).not.toContain("executions reconcile");
      expect(suggestion).not.toMatch(/executions[ .]reconcile/);
      expect(suggestion).toContain("No server holds");
      expect(suggestion).toContain("check by hand what it changed");
      expect(suggestion).toContain("another --run-id");
    }
    expect(readFileSync(join(checkout, "ran.txt"), "utf8")).toBe("pushed\n");
  });

  test("marks are bounded by run_identities: past it a new run_id is refused (capacity) and nothing runs", async () => {
    const checkout = countedCheckout();
    expect((await run(checkout, ["--run-id", "a"], { DOCKET_RUN_IDENTITIES: "1" })).code).toBe(0);
    const refused = await run(checkout, ["--run-id", "b", "--format", "json"], { DOCKET_RUN_IDENTITIES: "1" });
    expect(refused.code).not.toBe(0);
    expect(oneJsonDocument(refused.stdout).failure.error_code).toBe("capacity");
    expect(refused.stderr).toContain(".docket/runs");
    // The run_id kept is still that run; a run without a run_id is not bounded by marks.
    expect((await run(checkout, ["--run-id", "a"], { DOCKET_RUN_IDENTITIES: "1" })).code).toBe(0);
    expect((await run(checkout, [], { DOCKET_RUN_IDENTITIES: "1" })).code).toBe(0);
    expect(runs(checkout)).toBe(2);
  });

  test("a mark that cannot be read as one (cut, edited) runs nothing: whether the run_id was used is unknown", async () => {
    const checkout = countedCheckout();
    mkdirSync(join(checkout, ".docket", "runs"), { recursive: true });
    writeFileSync(join(checkout, ".docket", "runs", `${createHash("sha256").update("r-cut").digest("hex").slice(0, 40)}.json`), '{"run_id":"r-cut","execution');
    const refused = await run(checkout, ["--run-id", "r-cut", "--format", "json"]);
    expect(refused.code).toBe(1);
    const failure = oneJsonDocument(refused.stdout).failure;
    expect(failure.error_code).toBe("unavailable");
    expect(failure.message).toContain("is not a run mark");
    expect(failure.message).toContain("nothing ran");
    // Not the generic "check that the process doing the work is still running": no process does any (tester, session 34).
    expect(failure.suggestion).toBe("Fix what the message says (a full disk, a .docket/ this user cannot write to, a file in .docket/runs/ that is not a run mark) and run again: the same --run-id is safe.");
    expect(runs(checkout)).toBe(0);
  });

  test("runs without a server never take each other for a server: eight at once, distinct run_ids, beside a store file a server left, each runs once", async () => {
    const checkout = countedCheckout();
    // A server ran here once: every claim also reads the store file it left.
    await (await serve(checkout)).stop();
    const all = await Promise.all(Array.from({ length: 8 }, (_, i) => run(checkout, ["--run-id", `parallel-${i}`, "--input", `{"n":${i}}`])));
    expect(all.map((r) => ({ code: r.code, server: /does not answer|began serving|Cannot look up/.test(r.stderr) }))).toEqual(Array.from({ length: 8 }, () => ({ code: 0, server: false })));
    expect(runs(checkout)).toBe(8);
  });

  test("a run without a run_id beside a claim in progress is not taken for one with a server that does not answer", async () => {
    const checkout = countedCheckout();
    const look = holdCheckoutShared(checkout);
    try {
      const plain = await run(checkout, []);
      expect(plain.code).toBe(0);
      expect(plain.stderr).toContain("no server serves this checkout, so this execution is visible to this process alone");
      expect(plain.stderr).not.toContain("does not answer");
    } finally {
      if (look !== null && look !== "held") look.release();
    }
  });

  test("claimRunIdLocally: a server holding the checkout keeps the claim away, and no mark is left", () => {
    const checkout = countedCheckout();
    const lock = lockCheckout(checkout)!;
    try {
      expect(claimRunIdLocally(checkout, { run_id: "r", execution_id: "x-1", capability: "demo.counted", input_hash: "h" }, 10)).toEqual({ kind: "server" });
    } finally {
      lock.release();
    }
    expect(existsSync(join(checkout, ".docket", "runs"))).toBe(false);
    expect(claimRunIdLocally(checkout, { run_id: "r", execution_id: "x-1", capability: "demo.counted", input_hash: "h" }, 10).kind).toBe("claimed");
  });
});

describe("run_ids kept without a server, and the server", () => {
  test("the server started next records them: a start and a run with one are that run, and nothing runs again", async () => {
    const checkout = countedCheckout();
    const alone = await run(checkout, ["--run-id", "window-1", "--format", "json"]);
    expect(alone.code).toBe(0);
    const id = oneJsonDocument(alone.stdout).execution.id;
    // A second run whose mark's end is then edited by hand into something no run writes.
    expect((await run(checkout, ["--run-id", "window-2", "--input", '{"n":2}', "--format", "json"])).code).toBe(0);
    const editedMark = join(checkout, ".docket", "runs", `${createHash("sha256").update("window-2").digest("hex").slice(0, 40)}.json`);
    writeFileSync(editedMark, JSON.stringify({ ...JSON.parse(readFileSync(editedMark, "utf8")), end: { state: "banana", id: "zzz" } }));
    const server = await serve(checkout);
    try {
      const edited = await server.http.post("/api/v1/executions/start", { capability: "demo.counted", input: { n: 2 }, run_id: "window-2" });
      expect(edited.status).toBe(503);
      expect(edited.body.error).toMatchObject({ error_code: "unavailable", retryability: "never", outcome_certainty: "unknown" });
      expect(edited.body.error.message).toContain("holds an end that is not the one a run writes there (edited?)");
      const start = await server.http.post("/api/v1/executions/start", { capability: "demo.counted", input: {}, run_id: "window-1" });
      expect(start).toMatchObject({ status: 200 });
      expect(start.body.deduplicated).toBe(true);
      expect(start.body.details_expired).toBe(true);
      expect(start.body.execution.id).toBe(id);
      // Its end as the mark kept it, not an identity alone that reads as settled long ago (hostile tester, session 38).
      expect(start.body.execution).toMatchObject({ state: "succeeded", output: { n: 1 }, details_expired: true });
      const read = await server.http.get(`/api/v1/executions/get?id=${id}`);
      expect(read).toMatchObject({ id, state: "succeeded", output: { n: 1 }, details_expired: true });
      // Its events, page, live channel, artifacts, cancel and reconcile: not here, and each says why, not a bare "No execution".
      const why = `${id} ran in a docket run without a server (run_id window-1) and ended succeeded; its events and log stayed with that run`;
      const events = await server.http.get(`/api/v1/executions/events?id=${id}`);
      expect(events.error).toMatchObject({ error_code: "not_found", context: { id, run_id: "window-1", ran_without_server: true } });
      expect(events.error.message).toBe(`${why}, and this server, which knows only how it ended, has none of its events.`);
      expect(events.error.suggestion).toContain(`executions.get (GET /api/v1/executions/get?id=${id})`);
      for (const [path, body, cannot] of [
        ["/api/v1/executions/cancel", { id }, "cannot cancel it"],
        ["/api/v1/executions/reconcile", { id, outcome: "applied", note: "seen" }, "cannot reconcile it"],
        ["/api/v1/executions/artifacts", { id }, "cannot list its artifacts"],
      ] as const) {
        const answer = await server.http.post(path, body);
        expect({ path, status: answer.status, code: answer.body.error?.error_code }).toEqual({ path, status: 404, code: "not_found" });
        expect(answer.body.error.message).toStartWith(why);
        expect(answer.body.error.message).toContain(cannot);
      }
      const download = await fetch(`${server.http.url}/api/v1/executions/artifact?id=${id}&name=out.txt`);
      expect(download.status).toBe(404);
      expect(((await download.json()) as any).error.message).toStartWith(why);
      const page = await fetch(`${server.http.url}/cockpit/executions/${id}`);
      expect(page.status).toBe(404);
      expect(await page.text()).toContain("has no page of it");
      const live = await rawUpgrade(server.http.url, `/events?execution=${id}`);
      live.close();
      expect(live.status).toBe(404);
      expect(live.body).toContain(why);
      // Its mark removed while serving (to make room): answered as last read (checking tester).
      const marksDir = join(checkout, ".docket", "runs");
      const moved = join(checkout, "moved-marks");
      mkdirSync(moved);
      for (const name of readdirSync(marksDir)) renameSync(join(marksDir, name), join(moved, name));
      const after = await server.http.post("/api/v1/executions/start", { capability: "demo.counted", input: {}, run_id: "window-1" });
      expect(after.body.execution).toMatchObject({ id, state: "succeeded", output: { n: 1 }, details_expired: true });
      for (const name of readdirSync(moved)) renameSync(join(moved, name), join(marksDir, name));
      // Through the server, the run reads the end its mark kept.
      const through = await run(checkout, ["--run-id", "window-1", "--format", "json"]);
      expect(through.code).toBe(0);
      const document = oneJsonDocument(through.stdout);
      expect(document.deduplicated).toBe(true);
      expect(document.execution.id).toBe(id);
      expect(document.output).toEqual({ n: 1 });
      const conflict = await server.http.post("/api/v1/executions/start", { capability: "demo.counted", input: { n: 3 }, run_id: "window-1" });
      expect(conflict.status).toBe(409);
    } finally {
      await server.stop();
    }
    expect(runs(checkout)).toBe(2);
  });

  test("a start with the run_id of a run without a server still running, or killed mid-run, says so: it never answers an identity alone that reads as settled, and nothing runs again (hostile tester, session 38)", async () => {
    const checkout = countedCheckout();
    const running = spawnDocket(fromSource, ["run", "demo.counted", "--run-id", "outside-1", "--input", JSON.stringify({ wait: "go" })], { cwd: checkout });
    await pollUntil(async () => ({ ran: runs(checkout) }), (seen) => seen.ran === 1, "the run without a server to begin");
    const server = await serve(checkout);
    try {
      const start = await server.http.post("/api/v1/executions/start", { capability: "demo.counted", input: { wait: "go" }, run_id: "outside-1" });
      expect(start.status).toBe(503);
      expect(start.body.error).toMatchObject({ error_code: "unavailable", retryability: "after_delay", context: { run_id: "outside-1", pid: running.pid } });
      expect(start.body.error.message).toContain(`which docket run (pid ${running.pid}) has been running without a server since`);
      const id = start.body.error.context.execution_id as string;
      const read = await server.http.get(`/api/v1/executions/get?id=${id}`);
      expect(read.error).toMatchObject({ error_code: "not_found" });
      expect(read.error.message).toContain(`docket run (pid ${running.pid}) has been running without a server`);
      const events = await server.http.get(`/api/v1/executions/events?id=${id}`);
      expect(events.error).toMatchObject({ error_code: "not_found", context: { id, pid: running.pid, ran_without_server: true } });
      expect(events.error.message).toContain(`docket run (pid ${running.pid}) has been running without a server`);
      expect(events.error.message).toEndWith("This server has none of its events.");
      const cancel = await server.http.post("/api/v1/executions/cancel", { id });
      expect(cancel.body.error.message).toEndWith("This server cannot cancel it.");
      // Killed before it wrote how it ended: its outcome is unknown, and that is what a start answers.
      running.kill("SIGKILL");
      await running.exited;
      const after = await server.http.post("/api/v1/executions/start", { capability: "demo.counted", input: { wait: "go" }, run_id: "outside-1" });
      expect(after.status).toBe(503);
      expect(after.body.error).toMatchObject({ error_code: "unavailable", retryability: "never", outcome_certainty: "unknown" });
      expect(after.body.error.message).toContain("ended without writing how it ended (it was killed?): whether its work took effect is not known, and nothing runs again");
    } finally {
      running.kill("SIGKILL");
      await server.stop();
    }
    expect(runs(checkout)).toBe(1);
  });

  test("a run_id the server took is not run by a run once the server has stopped: it says to start the server", async () => {
    const checkout = countedCheckout();
    const server = await serve(checkout);
    let id: string;
    try {
      const start = await server.http.post("/api/v1/executions/start", { capability: "demo.counted", input: {}, run_id: "served-1" });
      id = start.body.execution.id;
      await pollUntil(() => server.http.get(`/api/v1/executions/get?id=${id}`), (e) => e.state === "succeeded", "the start to succeed");
    } finally {
      await server.stop();
    }
    expect(runs(checkout)).toBe(1);
    const after = await run(checkout, ["--run-id", "served-1", "--format", "json"]);
    expect(after.code).toBe(1);
    const failure = oneJsonDocument(after.stdout).failure;
    expect(failure.error_code).toBe("unavailable");
    expect(failure.message).toContain(`run_id served-1 was already used for ${id} by this checkout's server, which is not running now`);
    expect(failure.suggestion).toContain("docket serve");
    const conflict = await run(checkout, ["--run-id", "served-1", "--input", '{"n":9}', "--format", "json"]);
    expect(conflict.code).toBe(2);
    expect(oneJsonDocument(conflict.stdout).failure.error_code).toBe("run_id_conflict");
    expect(runs(checkout)).toBe(1);
    // The store file is left as a server leaves it: the next server opens it.
    const next = await serve(checkout);
    try {
      const again = await next.http.post("/api/v1/executions/start", { capability: "demo.counted", input: {}, run_id: "served-1" });
      expect(again.body.deduplicated).toBe(true);
      expect(again.body.execution.id).toBe(id!);
    } finally {
      await next.stop();
    }
  });
});

// docs/protocol.md end to end, with real processes: `docket run` reports to the server serving its checkout.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureDocketDir, leasePath } from "../../runtime/server/lease.ts";
import { completedOf, openLive } from "../server/_support/live-client.ts";
import { docket, fromSource, oneJsonDocument, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles } from "./_harness.ts";
import { aloneLines, api, pollUntil, reportedBy, serveCheckout, serveProcess } from "./_report-support.ts";

afterAll(removeTempDirs);

const DEMO = ["run", "executions.demonstrate", "--format", "json", "--input"];

/**
 * Freezes `serve` and runs executions.demonstrate in `checkout` to its end, unheard: it exits 0
 * and leaves its reports in .docket/reports/. Answers the execution's id; the server stays frozen.
 */
async function runUnheard(checkout: string, serve: ReturnType<typeof spawnDocket>): Promise<string> {
  serve.kill("SIGSTOP");
  const run = await docket(fromSource, [...DEMO, JSON.stringify({ steps: 2, delay_ms: 10 })], { cwd: checkout });
  expect(run.code).toBe(0);
  const id = oneJsonDocument(run.stdout).execution.id as string;
  expect(run.stderr).toContain(`it is left in ${checkout}/.docket/reports/${id}.json`);
  return id;
}

/** Waits for a file named go to appear (polling), whatever a cancel asks: its end is the test's to give. */
const GATE = `import { capability } from "docket";
import * as v from "valibot";
import { existsSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "demo.gate",
  title: "Gate",
  description: "Ends once a file named go appears.",
  effect: "read",
  cancellable: true,
  input: v.object({}),
  output: v.object({ went: v.boolean() }),
  async handler(_input, ctx) {
    while (!existsSync(join(ctx.root, "go"))) await new Promise((r) => setTimeout(r, 10));
    return { went: true };
  },
});
`;

/** Takes any data and answers how deep it nests. */
const DEEP_TAKE = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "deep.take",
  title: "Deep",
  description: "Answers how deep its data nests.",
  effect: "write",
  input: v.object({ data: v.unknown() }),
  output: v.number(),
  handler({ data }) {
    let depth = 0;
    for (let at: unknown = data; Array.isArray(at); at = at[0]) depth++;
    return depth;
  },
});
`;
/** A write whose PIN is a secret: the capability the tester guessed PINs against through run_id. */
const PIN_PAY = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "pin.pay",
  title: "Pay",
  description: "Pays an amount with a PIN.",
  effect: "write",
  input: v.object({ amount: v.number(), pin: sensitive(v.pipe(v.string(), v.regex(/^\\d{6}$/))) }),
  output: v.object({ paid: v.number() }),
  handler({ amount }) {
    return { paid: amount };
  },
});
`;
const stepsOf = (snapshot: any) => snapshot.steps.map((s: any) => [s.id, s.title, s.state, s.message]);

describe("docket run and the server serving its checkout", () => {
  test("docket run reports its execution: listed with actor cli and the run's pid, the same events, followed live", async () => {
    const checkout = tempCheckout();
    const server = await serveCheckout(checkout, { limits: { report_silence_ms: 5000 } });
    const http = api(server.url);
    const child = spawnDocket(fromSource, [...DEMO, '{"steps":5,"delay_ms":200}'], { cwd: checkout });
    try {
      const stdout = new Response(child.stdout).text();
      const stderr = watchStream(child.stderr);
      const listed = await reportedBy(http, child.pid);
      // A follower of the one execution: its history, then live, until it completes.
      const live = await openLive(server.url, `execution=${listed.id}`);
      const completed = await live.waitFor(completedOf(listed.id));
      await live.close();
      expect(await child.exited).toBe(0);
      const document = oneJsonDocument(await stdout);
      const run = document.execution;
      expect(run.id).toBe(listed.id);
      expect(run.actor).toEqual({ kind: "cli", pid: child.pid });

      const held = await http.get(`/api/v1/executions/get?id=${run.id}`);
      expect(held).toMatchObject({ id: run.id, state: "succeeded", actor: { kind: "cli", pid: child.pid }, repository: checkout, output: document.output, last_sequence: run.last_sequence });
      expect(stepsOf(held)).toEqual(stepsOf(run));
      expect(held.log.map((l: any) => [l.sequence, l.level, l.message])).toEqual(run.log.map((l: any) => [l.sequence, l.level, l.message]));
      expect(held.diagnostics).toEqual(run.diagnostics);
      expect(held.input).toEqual(run.input);

      const { events } = await http.get(`/api/v1/executions/events?id=${run.id}&limit=1000`);
      expect(events.map((e: any) => e.sequence)).toEqual(Array.from({ length: run.last_sequence }, (_, i) => i + 1));
      expect(events.at(-1)).toMatchObject({ type: "execution.completed", data: { state: "succeeded", output: document.output } });
      const ready = live.frames[0];
      expect(ready.type).toBe("stream.ready");
      // Some events came after the follower connected: it watched the run live, not only its history.
      expect(ready.replayed).toBeLessThan(run.last_sequence);
      expect(live.frames.filter((f) => typeof f.sequence === "number").map((f) => f.sequence)).toEqual(events.map((e: any) => e.sequence));
      expect(completed.data.output).toEqual(document.output);

      const said = await stderr.done;
      expect(said).toContain(`reported to the server at ${server.url}`);
      expect(aloneLines(said)).toBe(0);
      // Its end taken, the run leaves nothing for a server to take later (store/left-reports.ts).
      expect(existsSync(join(checkout, ".docket", "reports")) ? readdirSync(join(checkout, ".docket", "reports")) : []).toEqual([]);
    } finally {
      child.kill("SIGKILL");
      await server.stop();
    }
  });

  test("docket run cancelled through the server's API stops its own execution and exits 130", async () => {
    const checkout = tempCheckout();
    const server = await serveCheckout(checkout);
    const http = api(server.url);
    const child = spawnDocket(fromSource, [...DEMO, '{"steps":100,"delay_ms":100}'], { cwd: checkout });
    try {
      const stdout = new Response(child.stdout).text();
      const running = await reportedBy(http, child.pid, "running");
      const receipt = await http.post("/api/v1/executions/cancel", { id: running.id });
      expect(receipt.status).toBe(200);
      expect(receipt.body).toMatchObject({ id: running.id, requested: true, cancellable: true });
      expect(receipt.body.message).toContain(`pid ${child.pid}`);
      expect(await child.exited).toBe(130);
      const document = oneJsonDocument(await stdout);
      expect(document.execution.state).toBe("cancelled");
      const held = await http.get(`/api/v1/executions/get?id=${running.id}`);
      expect(held).toMatchObject({ state: "cancelled", last_sequence: document.execution.last_sequence, failure: { error_code: "cancelled" } });
      const { events } = await http.get(`/api/v1/executions/events?id=${running.id}&limit=1000`);
      // The run records the cancel in the name of who asked the server.
      expect(events.find((e: any) => e.type === "execution.cancel_requested").data).toEqual({ actor: { kind: "http" } });
    } finally {
      child.kill("SIGKILL");
      await server.stop();
    }
  });

  test("docket run that ends before a cancel asked of the server reaches it says so, and its document counts the execution's events as the server does (hostile tester, session 39)", async () => {
    const checkout = tempCheckout();
    // Waits for a file to appear (polling), whatever a cancel asks: its end is the test's to give.
    writeFiles(checkout, { "capabilities/demo.gate.ts": GATE });
    const server = await serveCheckout(checkout);
    const http = api(server.url);
    const child = spawnDocket(fromSource, ["run", "demo.gate", "--format", "json"], { cwd: checkout });
    try {
      const stdout = new Response(child.stdout).text();
      const stderr = new Response(child.stderr).text();
      const running = await reportedBy(http, child.pid, "running");
      // The run hears the server only in the answers to its reports: stopped, it hears nothing
      // until its handler has ended, and the report of that end is the first the cancel can answer.
      child.kill("SIGSTOP");
      const receipt = await http.post("/api/v1/executions/cancel", { id: running.id });
      expect(receipt.body).toMatchObject({ requested: true, state: "cancelling" });
      writeFileSync(join(checkout, "go"), "");
      child.kill("SIGCONT");
      expect(await child.exited).toBe(0);
      const document = oneJsonDocument(await stdout);
      const held = await http.get(`/api/v1/executions/get?id=${running.id}`);
      expect(held).toMatchObject({ state: "succeeded", output: { went: true } });
      expect(document.execution).toMatchObject({ id: running.id, state: "succeeded", last_sequence: held.last_sequence });
      const { events } = await http.get(`/api/v1/executions/events?id=${running.id}&limit=1000`);
      expect(events.map((e: any) => e.type)).toEqual(["execution.created", "execution.started", "execution.cancel_requested", "execution.completed"]);
      expect(await stderr).toContain(`holds a cancel asked of it for ${running.id} that reached this run only after it had ended succeeded: it stands there before this run's end, which is sequence 4 there (3 here)`);
    } finally {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await server.stop();
    }
  });

  /**
   * A `docket serve` of its own (its report silence set through its environment variable) and a
   * run reporting to it, SIGKILLed once the server holds it running: the failure the server ends
   * it with, and the run's pid.
   */
  async function killedMidRun(silenceMs: number, waitMs?: number): Promise<{ failure: any; pid: number }> {
    const checkout = tempCheckout();
    const serve = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout, env: { DOCKET_REPORT_SILENCE_MS: String(silenceMs) } });
    try {
      const banner = await watchStream(serve.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
      const http = api(banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!);
      const run = spawnDocket(fromSource, [...DEMO, '{"steps":100,"delay_ms":100}'], { cwd: checkout });
      try {
        const running = await reportedBy(http, run.pid, "running");
        run.kill("SIGKILL");
        await run.exited;
        const failed = await pollUntil(() => http.get(`/api/v1/executions/get?id=${running.id}`), (s) => s.state === "failed", "the killed run to fail", waitMs);
        return { failure: failed.failure, pid: run.pid };
      } finally {
        run.kill("SIGKILL");
      }
    } finally {
      serve.kill("SIGINT");
      await serve.exited;
    }
  }

  test("docket run killed mid-run is ended by the server after its report silence: failed unavailable, naming the pid", async () => {
    const { failure, pid } = await killedMidRun(500);
    // executions.demonstrate is a read: it changed nothing, however far it got.
    expect(failure).toMatchObject({ error_code: "unavailable", stage: "report", outcome_certainty: "not_applied", retryability: "safe", context: { pid, silence_ms: 500 } });
    expect(failure.message).toContain(`pid ${pid}`);
  });

  test("docket run killed mid-run is ended by the server as soon as it sees the process gone, not after the whole report silence: failed unavailable, reporter_exited", async () => {
    // A silence far longer than the test's own wait: only the process check can end it in time.
    const { failure, pid } = await killedMidRun(600_000, 60_000);
    expect(failure).toMatchObject({ error_code: "unavailable", stage: "report", outcome_certainty: "not_applied", context: { pid, reason: "reporter_exited" } });
    expect(failure.message).toContain(`docket run (pid ${pid}) exited without its end reaching this server`);
  }, 90_000);

  test("docket run whose server stops mid-run says once that it does not answer, keeps trying, gives up soon after its end, and still exits 0", async () => {
    const checkout = tempCheckout();
    const server = await serveCheckout(checkout);
    const http = api(server.url);
    const child = spawnDocket(fromSource, [...DEMO, '{"steps":6,"delay_ms":100}'], { cwd: checkout });
    try {
      const stdout = new Response(child.stdout).text();
      const stderr = new Response(child.stderr).text();
      await reportedBy(http, child.pid, "running");
      await server.stop();
      expect(await child.exited).toBe(0);
      expect(oneJsonDocument(await stdout)).toMatchObject({ execution: { state: "succeeded" }, output: { steps: 6 } });
      const said = await stderr;
      expect(said.match(/does not answer/g)).toHaveLength(1);
      expect(said).toMatch(new RegExp(`the server at ${server.url} does not answer \\(.+\\); this run goes on and keeps trying to report to it`));
      expect(said).toContain("did not answer within 3 s of this run's end, so the end of");
      expect(aloneLines(said)).toBe(0);
    } finally {
      child.kill("SIGKILL");
      await server.stop();
    }
  }, 20_000);

  test("docket run with no server, or only a stale lease, says so once on stderr; --format json stdout stays one document", async () => {
    const checkout = tempCheckout();
    const fresh = await docket(fromSource, [...DEMO, '{"steps":1,"delay_ms":0}'], { cwd: checkout });
    // A lease left by a server that is gone: its pid is not alive, nothing answers at its URL.
    ensureDocketDir(checkout);
    writeFileSync(leasePath(checkout), JSON.stringify({ url: "http://127.0.0.1:9", pid: 2 ** 22 + 7, root: checkout, token: null, started_at: new Date().toISOString() }));
    const stale = await docket(fromSource, [...DEMO, '{"steps":1,"delay_ms":0}'], { cwd: checkout });
    for (const result of [fresh, stale]) {
      expect(result.code).toBe(0);
      expect(oneJsonDocument(result.stdout)).toMatchObject({ execution: { state: "succeeded" } });
      expect(result.stdout).not.toContain("visible");
      expect(result.stderr.match(/^no server serves this checkout, so this execution is visible to this process alone$/gm)).toHaveLength(1);
    }
  });

  test("docket run --run-id with a server is one run with the server's starts and other runs: the same run_id and input answers that execution (followed to its end), another input is run_id_conflict, nothing runs twice", async () => {
    const checkout = tempCheckout();
    const server = await serveCheckout(checkout);
    const http = api(server.url);
    const run = (input: string, runId: string) => docket(fromSource, [...DEMO, input, "--run-id", runId], { cwd: checkout });
    try {
      const first = await run('{"steps":1,"delay_ms":0}', "rid-cli");
      expect(first.code).toBe(0);
      const original = oneJsonDocument(first.stdout);
      expect(original.deduplicated).toBeUndefined();

      // Again, the same input written otherwise: that execution, which did not run again.
      const again = await run('{"delay_ms":0,"steps":1}', "rid-cli");
      expect(again.code).toBe(0);
      const repeated = oneJsonDocument(again.stdout);
      expect(repeated).toMatchObject({ deduplicated: true, execution: { id: original.execution.id, state: "succeeded" }, output: original.output });
      expect(again.stderr).toContain(`run_id rid-cli was already used for ${original.execution.id}, so this run is that execution and nothing runs again`);
      // Another input: refused as a start would be, and nothing ran.
      const other = await run('{"steps":2,"delay_ms":0}', "rid-cli");
      expect(other.code).toBe(2);
      expect(oneJsonDocument(other.stdout)).toMatchObject({ execution: null, failure: { error_code: "run_id_conflict", context: { run_id: "rid-cli", execution_id: original.execution.id } } });
      // A start over HTTP with that run_id is the same run too.
      const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 }, run_id: "rid-cli" });
      expect(started.body).toMatchObject({ deduplicated: true, execution: { id: original.execution.id } });

      // A run_id a running start holds: the run follows that execution to its end and ends as it does.
      const running = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 4, delay_ms: 150 }, run_id: "rid-http" });
      const follower = await run('{"steps":4,"delay_ms":150}', "rid-http");
      expect(follower.code).toBe(0);
      expect(oneJsonDocument(follower.stdout)).toMatchObject({ deduplicated: true, execution: { id: running.body.execution.id, state: "succeeded", actor: { kind: "http" } } });

      const { items } = await http.get("/api/v1/executions?limit=100");
      expect(items.map((item: any) => item.run_id).sort()).toEqual(["rid-cli", "rid-http"]);
    } finally {
      await server.stop();
    }
  });

  test("docket run --run-id leaves secrets out of the run's identity, as a start does: another PIN is that run, never a conflict that tells the PIN (tester: pin.pay)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/pin.pay.ts": PIN_PAY });
    const serve = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    const run = (input: object) => docket(fromSource, ["run", "pin.pay", "--format", "json", "--input", JSON.stringify(input), "--run-id", "payment-2026-12-03-1"], { cwd: checkout });
    try {
      const banner = await watchStream(serve.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
      const http = api(banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!);
      const first = await run({ amount: 12, pin: "493817" });
      expect(first.code).toBe(0);
      const original = oneJsonDocument(first.stdout);
      expect(original.execution.input).toEqual({ amount: 12, pin: "[redacted]" });
      // A start and another run with a wrong PIN are both that run, as one with the right PIN is.
      for (const pin of ["000000", "493817"]) {
        const started = await http.post("/api/v1/executions/start", { capability: "pin.pay", input: { amount: 12, pin }, run_id: "payment-2026-12-03-1" });
        expect({ pin, status: started.status, body: started.body }).toMatchObject({ pin, status: 200, body: { deduplicated: true, execution: { id: original.execution.id } } });
      }
      const again = await run({ amount: 12, pin: "111111" });
      expect(again.code).toBe(0);
      expect(oneJsonDocument(again.stdout)).toMatchObject({ deduplicated: true, execution: { id: original.execution.id } });
      // What is not secret still tells runs apart.
      const other = await run({ amount: 13, pin: "493817" });
      expect(other.code).toBe(2);
      expect(oneJsonDocument(other.stdout)).toMatchObject({ failure: { error_code: "run_id_conflict" } });
      const { items } = await http.get("/api/v1/executions?limit=10");
      expect(items).toHaveLength(1);
    } finally {
      serve.kill("SIGKILL");
      await serve.exited;
    }
  });

  test("docket run --run-id naming an execution whose details expired ends at once as it ended, with details_expired; one the server forgot is refused at once, never a retry", async () => {
    const checkout = tempCheckout();
    const server = await serveCheckout(checkout, { storeKind: "sqlite", limits: { details_retention_ms: 1000 } });
    const http = api(server.url);
    const run = (runId: string, format: "json" | "text" = "json") => docket(fromSource, ["run", "executions.demonstrate", "--format", format, "--input", '{"steps":1,"delay_ms":0}', "--run-id", runId], { cwd: checkout });
    try {
      const first = await run("rid-expired");
      expect(first.code).toBe(0);
      const id = oneJsonDocument(first.stdout).execution.id;
      await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (s) => s.details_expired === true, "its details to expire", 10_000);

      const again = await run("rid-expired");
      expect(again.code).toBe(0);
      expect(oneJsonDocument(again.stdout)).toMatchObject({ deduplicated: true, details_expired: true, execution: { id, state: "succeeded", details_expired: true }, output: null });
      expect(again.stderr).toContain(`${id} succeeded; its details expired, so its output and log are no longer kept`);
      expect(again.stderr).not.toContain("unavailable");
      // In text, the output it no longer has is not printed as "null".
      const text = await run("rid-expired", "text");
      expect(text.code).toBe(0);
      expect(text.stdout).toBe("");
    } finally {
      await server.stop();
    }

    const forgetting = tempCheckout();
    const small = await serveCheckout(forgetting, { limits: { executions_retained: 1 } });
    const runThere = (runId: string) => docket(fromSource, ["run", "executions.demonstrate", "--format", "json", "--input", '{"steps":1,"delay_ms":0}', "--run-id", runId], { cwd: forgetting });
    try {
      const forgotten = oneJsonDocument((await runThere("rid-forgotten")).stdout).execution.id;
      expect((await runThere("rid-newer")).code).toBe(0);
      const again = await runThere("rid-forgotten");
      // Its end is known nowhere: refused like a run_id_conflict, with nothing to wait for or retry.
      expect(again.code).toBe(2);
      expect(oneJsonDocument(again.stdout)).toMatchObject({
        deduplicated: true,
        details_expired: true,
        execution: { id: forgotten, capability: "executions.demonstrate", run_id: "rid-forgotten", details_expired: true },
        failure: { error_code: "not_found", retryability: "never", outcome_certainty: "unknown", context: { run_id: "rid-forgotten", execution_id: forgotten } },
      });
      expect(again.stderr).toContain("no longer keeps");
    } finally {
      await small.stop();
    }
  }, 30_000);

  test("docket run --run-id with an input as deep as any input may be (128 levels) is reported and its run_id kept: run again, it is that execution", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/deep.take.ts": DEEP_TAKE });
    const serve = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    let deep: unknown = 1;
    for (let i = 0; i < 127; i++) deep = [deep];
    const run = () => docket(fromSource, ["run", "deep.take", "--format", "json", "--input", JSON.stringify({ data: deep }), "--run-id", "rid-deep"], { cwd: checkout });
    try {
      const banner = await watchStream(serve.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
      const http = api(banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!);
      const first = await run();
      expect(first.stderr).not.toContain("refused");
      expect(first.code).toBe(0);
      const again = await run();
      expect(again.code).toBe(0);
      expect(oneJsonDocument(again.stdout)).toMatchObject({ deduplicated: true, execution: { id: oneJsonDocument(first.stdout).execution.id } });
      const { items } = await http.get("/api/v1/executions?limit=10");
      expect(items.map((item: any) => item.run_id)).toEqual(["rid-deep"]);
      // Started over HTTP, the same input fits (executions.start's own envelope is not counted), one level more does not.
      const started = await http.post("/api/v1/executions/start", { capability: "deep.take", input: { data: deep } });
      expect(started.status).toBe(200);
      const deeper = await http.post("/api/v1/executions/start", { capability: "deep.take", input: { data: [deep] } });
      expect(deeper.status).toBe(400);
      expect(deeper.body.error.message).toBe("Cannot start deep.take: the input nests deeper than 128 levels.");
    } finally {
      serve.kill("SIGTERM");
      await serve.exited;
    }
  });

  test("docket run --run-id whose first report the server refuses runs nothing: not kept there, the run_id would not stop the next run", async () => {
    const checkout = tempCheckout();
    // One run identity: the second run_id is refused by the server (capacity), as a start's would be.
    const server = await serveCheckout(checkout, { limits: { run_identities: 1 } });
    const run = (runId: string) => docket(fromSource, [...DEMO, '{"steps":1,"delay_ms":0}', "--run-id", runId], { cwd: checkout });
    try {
      expect((await run("rid-kept")).code).toBe(0);
      const refused = await run("rid-refused");
      expect(refused.code).toBe(1);
      expect(oneJsonDocument(refused.stdout)).toMatchObject({ execution: null, failure: { error_code: "unavailable", context: { run_id: "rid-refused", server_error_code: "capacity" } } });
      expect(refused.stderr).toContain("refused this run's first report (capacity:");
      expect(refused.stderr).toContain("so run_id rid-refused could not be kept there, and a run with it again would run again; nothing ran");
      // The server's word on retrying stands (waiting frees no run identity), and nothing says the run goes on.
      expect(oneJsonDocument(refused.stdout).failure).toMatchObject({ retryability: "never", suggestion: expect.stringContaining("--run-identities") });
      expect(refused.stderr).not.toContain("visible to this process alone");
      // The server shows the run from its first report, queued, and ends it there: it never started.
      const { items } = await api(server.url).get("/api/v1/executions?limit=10");
      expect(items.map((item: any) => [item.run_id, item.state, item.started_at, item.failure?.outcome_certainty ?? null])).toEqual([
        ["rid-refused", "cancelled", null, "not_applied"],
        ["rid-kept", "succeeded", expect.any(String), null],
      ]);
    } finally {
      await server.stop();
    }
  });

  test("docket run --run-id with a server that holds the checkout but does not answer (frozen) runs nothing: whether the run_id was used cannot be known", async () => {
    const checkout = tempCheckout();
    const serve = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    try {
      const banner = await watchStream(serve.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
      const http = api(banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!);
      serve.kill("SIGSTOP");
      const frozen = await docket(fromSource, [...DEMO, '{"steps":1,"delay_ms":0}', "--run-id", "rid-frozen"], { cwd: checkout });
      // Without a run_id the run goes on here, and says the server is frozen, not absent (tester S):
      // it is the checkout's server, reported to once it answers (here it never does, so the run
      // gives up on it 3 s after its end).
      const alone = await docket(fromSource, [...DEMO, '{"steps":1,"delay_ms":0}'], { cwd: checkout });
      serve.kill("SIGCONT");
      expect(alone.code).toBe(0);
      expect(alone.stderr).toContain(`the docket server (pid ${serve.pid}) serving this checkout at`);
      expect(alone.stderr).toContain("does not answer; this run goes on and reports to it once it answers");
      expect(alone.stderr).toContain("did not answer within 3 s of this run's end");
      expect(alone.stderr).not.toContain("visible to this process alone");
      expect(alone.stderr).not.toContain("no server serves this checkout");
      expect(frozen.code).toBe(1);
      expect(oneJsonDocument(frozen.stdout)).toMatchObject({ execution: null, failure: { error_code: "unavailable", retryability: "safe", context: { pid: serve.pid, run_id: "rid-frozen" } } });
      expect(frozen.stderr).toContain("does not answer, so whether run_id rid-frozen was used already cannot be known; nothing ran");
      // Answering again, the same run_id runs, once.
      const again = await docket(fromSource, [...DEMO, '{"steps":1,"delay_ms":0}', "--run-id", "rid-frozen"], { cwd: checkout });
      expect(again.code).toBe(0);
      const { items } = await http.get("/api/v1/executions?limit=10");
      // The run without a run_id may be there too: a report it gave up on is read once the server resumes.
      expect(items.map((item: any) => item.run_id).filter((runId: string | null) => runId !== null)).toEqual(["rid-frozen"]);
    } finally {
      serve.kill("SIGCONT");
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 30_000);

  test("docket run --run-id following another execution follows it through a restart of the server, and ends as it ended there", async () => {
    const checkout = tempCheckout();
    let serve = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    try {
      const banner = await watchStream(serve.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
      const http = api(banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!);
      const input = { steps: 40, delay_ms: 200 };
      const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input, run_id: "rid-follow" });
      const follower = spawnDocket(fromSource, [...DEMO, JSON.stringify(input), "--run-id", "rid-follow"], { cwd: checkout });
      const stdout = new Response(follower.stdout).text();
      await watchStream(follower.stderr).until(/following it to its end/);
      serve.kill("SIGKILL");
      await serve.exited;
      await Bun.sleep(1000);
      serve = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
      await watchStream(serve.stderr).until(/docket serving/);
      // The restarted server ends what was running when it was killed; the follower ends as that did.
      expect(await follower.exited).toBe(1);
      expect(oneJsonDocument(await stdout)).toMatchObject({ deduplicated: true, execution: { id: started.body.execution.id, state: "failed" }, failure: { error_code: "interrupted" } });
    } finally {
      serve.kill("SIGTERM");
      await serve.exited;
    }
  });

  /**
   * executions.demonstrate with `input` and run_id `runId` in a new served checkout, its server
   * SIGKILLed once the run reported: the run exits 0, its reports left. `meanwhile` looks at the
   * checkout before a server starts there again; then the restarted server holds the execution
   * ended, and a rerun with the same run_id (a CI job's re-run) ends as it did, running nothing.
   * Answers the execution as the restarted server holds it.
   */
  async function killedMidRunThenRerun(input: string, runId: string, meanwhile: (checkout: string, id: string, stderr: string) => void): Promise<any> {
    const checkout = tempCheckout();
    let { serve, http } = await serveProcess(checkout);
    try {
      const run = spawnDocket(fromSource, [...DEMO, input, "--run-id", runId], { cwd: checkout });
      const stderr = new Response(run.stderr).text();
      const id = (await reportedBy(http, run.pid, "running")).id;
      serve.kill("SIGKILL");
      await serve.exited;
      expect(await run.exited).toBe(0);
      meanwhile(checkout, id, await stderr);
      ({ serve, http } = await serveProcess(checkout));
      const ended = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (got) => got.state !== "running", `${id} ended at the restarted server`);
      expect(existsSync(join(checkout, ".docket", "reports", `${id}.json`))).toBe(false);
      const rerun = await docket(fromSource, [...DEMO, input, "--run-id", runId], { cwd: checkout });
      expect(rerun.code).toBe(0);
      expect(oneJsonDocument(rerun.stdout)).toMatchObject({ deduplicated: true, execution: { id, state: "succeeded" } });
      return ended;
    } finally {
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }

  test("docket run --run-id that ends while its server is down leaves its end in .docket/reports/: the restarted server records it as it ended, and a rerun (a CI job's re-run) ends as it did, running nothing (tester, session 34)", async () => {
    let stray = "";
    let folder = "";
    const ended = await killedMidRunThenRerun(JSON.stringify({ steps: 8, delay_ms: 250 }), "rid-left", (checkout, id, said) => {
      expect(said).toContain(`so the end of ${id} was not reported to it; it is left in ${checkout}/.docket/reports/${id}.json, which the server takes once it finds this run's process gone`);
      expect(existsSync(join(checkout, ".docket", "reports", `${id}.json`))).toBe(true);
      // One left for an execution this server's store never held: no server would take it, and the next one removes it.
      stray = join(checkout, ".docket", "reports", "x-20260101T000000Z-00000000.json");
      writeFileSync(stray, JSON.stringify({ id: "x-20260101T000000Z-00000000", reports: [] }));
      // A folder under a report's name is no report of docket's: left as it is, and the server starts all the same (checking tester).
      folder = join(checkout, ".docket", "reports", "x-20260101T000000Z-00000001.json");
      mkdirSync(folder);
    });
    expect(ended).toMatchObject({ state: "succeeded", output: { steps: 8 } });
    expect(existsSync(stray)).toBe(false);
    expect(existsSync(folder)).toBe(true);
  }, 60_000);

  test("docket run that a server asked to cancel, then died, and that ended unaware leaves its end in .docket/reports/: the restarted server records it as it ended, after the cancel it stored (checking tester, session 39)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/demo.gate.ts": GATE });
    let { serve, http } = await serveProcess(checkout);
    const run = spawnDocket(fromSource, ["run", "demo.gate", "--run-id", "rk1", "--format", "json"], { cwd: checkout });
    try {
      const stdout = new Response(run.stdout).text();
      const id = (await reportedBy(http, run.pid, "running")).id as string;
      // It hears the server only in the answers to its reports: stopped, it hears nothing of the cancel.
      run.kill("SIGSTOP");
      expect((await http.post("/api/v1/executions/cancel", { id })).body).toMatchObject({ requested: true, state: "cancelling" });
      serve.kill("SIGKILL");
      await serve.exited;
      writeFileSync(join(checkout, "go"), "");
      run.kill("SIGCONT");
      expect(await run.exited).toBe(0);
      expect(oneJsonDocument(await stdout).execution.state).toBe("succeeded");
      ({ serve, http } = await serveProcess(checkout));
      const ended = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (got) => got.state !== "running" && got.state !== "cancelling", `${id} ended at the restarted server`);
      expect(ended).toMatchObject({ state: "succeeded", output: { went: true }, last_sequence: 4 });
      const { events } = await http.get(`/api/v1/executions/events?id=${id}`);
      expect(events.map((e: any) => e.type)).toEqual(["execution.created", "execution.started", "execution.cancel_requested", "execution.completed"]);
      expect(existsSync(join(checkout, ".docket", "reports", `${id}.json`))).toBe(false);
    } finally {
      run.kill("SIGCONT");
      run.kill("SIGKILL");
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 60_000);

  test("docket run --run-id that logged more than 16 MiB of events while its server was down leaves them all: the restarted server records it as it ended, and a rerun ends as it did (CLI tester)", async () => {
    const ended = await killedMidRunThenRerun(JSON.stringify({ steps: 3, delay_ms: 400, events: 150_000 }), "rid-many", (checkout, id, said) => {
      expect(said).toContain(`it is left in ${checkout}/.docket/reports/${id}.json`);
      expect(statSync(join(checkout, ".docket", "reports", `${id}.json`)).size).toBeGreaterThan(16 << 20);
    });
    expect(ended).toMatchObject({ state: "succeeded", output: { steps: 3 } });
  }, 90_000);

  test("docket run whose server was frozen through the whole run leaves its reports: a restarted server that never heard of the execution takes them, and holds it as it ended (CLI tester)", async () => {
    const checkout = tempCheckout();
    let { serve, http } = await serveProcess(checkout);
    try {
      const id = await runUnheard(checkout, serve);
      serve.kill("SIGKILL");
      await serve.exited;
      // Beside it, files that are no reports docket left (cut short, not JSON): refused and removed
      // once, not read again at every look for ever.
      const cut = join(checkout, ".docket", "reports", "x-20261205T000000Z-0000c0de.json");
      const garbage = join(checkout, ".docket", "reports", "x-20261205T000000Z-0000beef.json");
      writeFileSync(cut, (await Bun.file(join(checkout, ".docket", "reports", `${id}.json`)).text()).slice(0, 100));
      writeFileSync(garbage, "not json at all");
      let said: Awaited<ReturnType<typeof serveProcess>>["said"];
      ({ serve, http, said } = await serveProcess(checkout));
      const held = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (got) => got.state === "succeeded", `${id} taken by the restarted server`);
      expect(held).toMatchObject({ id, state: "succeeded", output: { steps: 2 }, actor: { kind: "cli" } });
      expect(existsSync(join(checkout, ".docket", "reports", `${id}.json`))).toBe(false);
      await said.until(/0000beef: the reports its run left in \.docket\/reports\/ could not be taken: the file holds no report that checks/);
      await said.until(/0000c0de: the reports its run left in \.docket\/reports\/ could not be taken: the file holds no report that checks/);
      expect(existsSync(cut)).toBe(false);
      expect(existsSync(garbage)).toBe(false);
    } finally {
      serve.kill("SIGCONT");
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 60_000);

  test("reports left for an execution a starting server may not admit now (its disk floor) are kept for later, not removed: the next server takes them (checking tester)", async () => {
    const checkout = tempCheckout();
    let { serve, http, said } = await serveProcess(checkout);
    try {
      const id = await runUnheard(checkout, serve);
      const left = join(checkout, ".docket", "reports", `${id}.json`);
      serve.kill("SIGKILL");
      await serve.exited;
      ({ serve, http, said } = await serveProcess(checkout, ["--disk-free-floor-bytes", "1099511627776"]));
      await said.until(new RegExp(`${id}: the reports its run left in .docket/reports/ are not taken for now, and kept for later`));
      expect(existsSync(left)).toBe(true);
      expect((await http.get(`/api/v1/executions/get?id=${id}`)).error).toMatchObject({ error_code: "not_found" });
      serve.kill("SIGTERM");
      await serve.exited;
      ({ serve, http, said } = await serveProcess(checkout));
      const held = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (got) => got.state === "succeeded", `${id} taken by the next server`);
      expect(held).toMatchObject({ id, state: "succeeded" });
      expect(existsSync(left)).toBe(false);
    } finally {
      serve.kill("SIGCONT");
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 60_000);

  test("docket run whose server was frozen through the whole run leaves its reports, and the server, once it wakes, takes them within seconds (checking tester)", async () => {
    const checkout = tempCheckout();
    const { serve, http } = await serveProcess(checkout);
    try {
      const id = await runUnheard(checkout, serve);
      serve.kill("SIGCONT");
      const held = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (got) => got.state === "succeeded", `${id} taken by the server once it woke`);
      expect(held).toMatchObject({ id, state: "succeeded", output: { steps: 2 } });
      expect(existsSync(join(checkout, ".docket", "reports", `${id}.json`))).toBe(false);
    } finally {
      serve.kill("SIGCONT");
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 60_000);

  test("a memory-store server frozen through a run takes what the run left once it wakes, as the run says; one started after a file was left leaves it for a server with the store file (MCP/CLI tester, session 44)", async () => {
    const checkout = tempCheckout();
    const { serve, http } = await serveProcess(checkout, ["--store", "memory"]);
    let older: string;
    try {
      older = await runUnheard(checkout, serve);
      serve.kill("SIGCONT");
      const held = await pollUntil(() => http.get(`/api/v1/executions/get?id=${older}`), (got) => got.state === "succeeded", `${older} taken by the memory server once it woke`);
      expect(held).toMatchObject({ id: older, state: "succeeded", output: { steps: 2 } });
      expect(existsSync(join(checkout, ".docket", "reports", `${older}.json`))).toBe(false);
      older = await runUnheard(checkout, serve);
      // Killed frozen: woken, it would take this file too.
      serve.kill("SIGKILL");
    } finally {
      serve.kill("SIGCONT");
      serve.kill("SIGTERM");
      await serve.exited;
    }
    // Left before this server started: maybe an execution .docket/state.db holds, which a memory store cannot know.
    const next = await serveProcess(checkout, ["--store", "memory"]);
    try {
      await Bun.sleep(6_000);
      expect(existsSync(join(checkout, ".docket", "reports", `${older}.json`))).toBe(true);
      expect((await next.http.get(`/api/v1/executions/get?id=${older}`)).error).toMatchObject({ error_code: "not_found" });
    } finally {
      next.serve.kill("SIGTERM");
      await next.serve.exited;
    }
  }, 60_000);

  test("docket run killed while it waits for its server at its end (a CI job cancelled then) has left its end already: the restarted server records it as it ended (checking tester, session 34)", async () => {
    const checkout = tempCheckout();
    let { serve, http } = await serveProcess(checkout);
    try {
      const run = spawnDocket(fromSource, [...DEMO, JSON.stringify({ steps: 4, delay_ms: 250 }), "--run-id", "rid-killed"], { cwd: checkout });
      const id = (await reportedBy(http, run.pid, "running")).id;
      serve.kill("SIGKILL");
      await serve.exited;
      const left = join(checkout, ".docket", "reports", `${id}.json`);
      await pollUntil(async () => existsSync(left), (there) => there, `${left} written as the run ends`);
      // Left while the run still waits out its 3 s end window (it exits at once once it gives up).
      await Bun.sleep(500);
      expect(run.exitCode).toBeNull();
      run.kill("SIGKILL");
      await run.exited;

      ({ serve, http } = await serveProcess(checkout));
      const ended = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (got) => got.state !== "running", `${id} ended at the restarted server`);
      expect(ended).toMatchObject({ state: "succeeded", output: { steps: 4 } });
      expect(existsSync(left)).toBe(false);
    } finally {
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 60_000);

  test("docket run whose server froze a moment before its end, killed 1.5 s after that end, has left its end already: the restarted server records it as it ended (second checking tester, session 34)", async () => {
    const checkout = tempCheckout();
    let { serve, http } = await serveProcess(checkout);
    try {
      const run = spawnDocket(fromSource, [...DEMO, JSON.stringify({ steps: 4, delay_ms: 250 }), "--run-id", "rid-frozen"], { cwd: checkout });
      const said = watchStream(run.stderr);
      const id = (await reportedBy(http, run.pid, "running")).id;
      // Frozen with a report in flight: that report waits 3 s for its answer, longer than the run has left.
      serve.kill("SIGSTOP");
      await said.until(/succeeded in/);
      await Bun.sleep(1500);
      expect(run.exitCode).toBeNull();
      run.kill("SIGKILL");
      await run.exited;
      serve.kill("SIGKILL");
      await serve.exited;

      ({ serve, http } = await serveProcess(checkout));
      const ended = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (got) => got.state !== "running", `${id} ended at the restarted server`);
      expect(ended).toMatchObject({ state: "succeeded", output: { steps: 4 } });
    } finally {
      serve.kill("SIGCONT");
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 60_000);

  test("docket run whose server stops answering only for a moment at its end takes back what it left once the server takes its end", async () => {
    const checkout = tempCheckout();
    const { serve, http } = await serveProcess(checkout);
    try {
      const run = spawnDocket(fromSource, [...DEMO, JSON.stringify({ steps: 4, delay_ms: 250 })], { cwd: checkout });
      const id = (await reportedBy(http, run.pid, "running")).id;
      // Frozen until the run has ended and left its end, then thawed within the 3 s window.
      serve.kill("SIGSTOP");
      const left = join(checkout, ".docket", "reports", `${id}.json`);
      try {
        await pollUntil(async () => existsSync(left), (there) => there, `${left} written as the run ends`);
      } finally {
        serve.kill("SIGCONT");
      }
      expect(await run.exited).toBe(0);
      expect((await http.get(`/api/v1/executions/get?id=${id}`)).state).toBe("succeeded");
      expect(existsSync(left)).toBe(false);
    } finally {
      serve.kill("SIGCONT");
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 60_000);

  test("docket run --run-id --deadline-ms following another execution at the server stops waiting once its deadline passes (exit 1); that execution goes on", async () => {
    const checkout = tempCheckout();
    const server = await serveCheckout(checkout);
    const http = api(server.url);
    try {
      const input = { steps: 100, delay_ms: 200 };
      const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input, run_id: "rid-late" });
      const id = started.body.execution.id;
      const late = await docket(fromSource, [...DEMO, JSON.stringify(input), "--run-id", "rid-late", "--deadline-ms", "1500"], { cwd: checkout });
      expect(late.stderr).toContain("following it to its end");
      expect(late.code).toBe(1);
      const document = oneJsonDocument(late.stdout);
      expect(document).toMatchObject({ execution: null, failure: { error_code: "deadline_exceeded", retryability: "safe", context: { run_id: "rid-late", execution_id: id, deadline_ms: 1500 } } });
      expect(document.failure.message).toContain("stopped waiting");
      expect(document.failure.message).toContain("goes on");
      expect((await http.get(`/api/v1/executions/get?id=${id}`)).state).toBe("running");
      await http.post("/api/v1/executions/cancel", { id });
    } finally {
      await server.stop();
    }
  }, 30_000);

  test("docket run reports to a server that requires a token, with the token of its lease", async () => {
    const checkout = tempCheckout();
    const token = "a-token-for-report-tests-0123";
    const server = await serveCheckout(checkout, { token });
    try {
      const result = await docket(fromSource, [...DEMO, '{"steps":1,"delay_ms":0}'], { cwd: checkout });
      expect(result.code).toBe(0);
      const { execution } = oneJsonDocument(result.stdout);
      expect(aloneLines(result.stderr)).toBe(0);
      const held = await api(server.url, token).get(`/api/v1/executions/get?id=${execution.id}`);
      expect(held).toMatchObject({ state: "succeeded", actor: { kind: "cli" }, last_sequence: execution.last_sequence });
    } finally {
      await server.stop();
    }
  });
});

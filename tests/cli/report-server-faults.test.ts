// A reported run against a `docket serve` that is killed or frozen (docs/durability.md, docs/protocol.md),
// with real processes on the sqlite store: a cancel the server answered survives its SIGKILL, and a
// server stopped (SIGSTOP) past the report silence does not blame a run that reported all along.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docket, fromSource, oneJsonDocument, removeTempDirs, spawnDocket, tempCheckout, tempDir, watchStream, writeFiles } from "./_harness.ts";
import { api, pollUntil, reportedBy } from "./_report-support.ts";
import { STOP_SIGNAL_ECHO_MS } from "../../runtime/adapter/stop-signals.ts";

afterAll(removeTempDirs);

const DEMO = ["run", "executions.demonstrate", "--format", "json", "--input"];

/** `docket serve` in a process of its own (the default sqlite store), and its URL once it serves. */
async function serve(checkout: string, flags: string[] = []) {
  const child = spawnDocket(fromSource, ["serve", "--port", "0", ...flags], { cwd: checkout });
  void new Response(child.stdout).text();
  const banner = await watchStream(child.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/).catch((error) => {
    child.kill("SIGKILL");
    throw error;
  });
  return { child, url: banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]! };
}

/** `team.touch` appends a line to touched.txt each time it runs. */
const TOUCH = 'import { capability } from "docket";\nimport * as v from "valibot";\nimport { appendFileSync } from "node:fs";\nexport default capability({ id: "team.touch", title: "Touch", description: "Writes a line.", effect: "write", input: v.object({}), output: v.object({}), handler(_input, ctx) { appendFileSync(ctx.root + "/touched.txt", "ran\\n"); return {}; } });\n';

/**
 * `docket serve` in a new checkout whose `team.slow` takes 3 s to load (6 s in all: its trial,
 * then its import), answered once the server holds the checkout's lock: it has no lease yet.
 */
async function serveStillLoading() {
  const checkout = tempCheckout();
  writeFiles(checkout, {
    "capabilities/team.slow.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nawait new Promise((r) => setTimeout(r, 3000));\nexport default capability({ id: "team.slow", title: "Slow", description: "Loads slowly.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n',
    "capabilities/team.touch.ts": TOUCH,
  });
  const server = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
  await pollUntil(async () => existsSync(join(checkout, ".docket", "serve.lock")), (held) => held, "the server to hold its lock");
  return { checkout, server };
}

describe("docket run and a server that is killed or frozen", () => {
  test("docket run whose cancel the server answered before it was SIGKILLed is cancelled by the restarted server", async () => {
    const checkout = tempCheckout();
    const first = await serve(checkout);
    let second: Awaited<ReturnType<typeof serve>> | null = null;
    const run = spawnDocket(fromSource, [...DEMO, '{"steps":100,"delay_ms":100}'], { cwd: checkout });
    try {
      const stdout = new Response(run.stdout).text();
      const running = await reportedBy(api(first.url), run.pid, "running");
      const receipt = await api(first.url).post("/api/v1/executions/cancel", { id: running.id });
      // Killed the moment it answered: the run has not had a report answered since.
      first.child.kill("SIGKILL");
      expect(receipt.body).toMatchObject({ requested: true });
      await first.child.exited;
      second = await serve(checkout);
      expect(await run.exited).toBe(130);
      const document = oneJsonDocument(await stdout);
      expect(document.execution.state).toBe("cancelled");
      // The answer was the stored state: the request was on disk before it was shown.
      expect(receipt.body.state).toBe("cancelling");
      const http = api(second.url);
      const held = await pollUntil(() => http.get(`/api/v1/executions/get?id=${running.id}`), (s) => s.state === "cancelled", "the restarted server to hold the run's end");
      expect(held).toMatchObject({ actor: { kind: "cli", pid: run.pid }, last_sequence: document.execution.last_sequence, failure: { error_code: "cancelled" } });
      const { events } = await http.get(`/api/v1/executions/events?id=${running.id}&limit=1000`);
      expect(events.map((e: { sequence: number }) => e.sequence)).toEqual(Array.from({ length: held.last_sequence }, (_, i) => i + 1));
      // One cancel, the one the first server stored in the name of who asked it.
      expect(events.filter((e: any) => e.type === "execution.cancel_requested").map((e: any) => e.data)).toEqual([{ actor: { kind: "http" } }]);
    } finally {
      run.kill("SIGKILL");
      first.child.kill("SIGKILL");
      second?.child.kill("SIGKILL");
    }
  }, 30_000);

  test("docket run keeps reporting while its server is stopped (SIGSTOP) past the report silence: on SIGCONT it is still running, and succeeds", async () => {
    const checkout = tempCheckout();
    const server = await serve(checkout, ["--report-silence-ms", "1000"]);
    const http = api(server.url);
    const run = spawnDocket(fromSource, [...DEMO, '{"steps":40,"delay_ms":100}'], { cwd: checkout });
    try {
      const stdout = new Response(run.stdout).text();
      const running = await reportedBy(http, run.pid, "running");
      server.child.kill("SIGSTOP");
      // The stop is what is under test: 2.5 times the silence, shorter than a report's 3 s timeout.
      await Bun.sleep(2500);
      server.child.kill("SIGCONT");
      expect(await run.exited).toBe(0);
      expect(oneJsonDocument(await stdout).execution.state).toBe("succeeded");
      const held = await pollUntil(() => http.get(`/api/v1/executions/get?id=${running.id}`), (s) => s.state !== "running", "the server to hold the run's end");
      expect(held).toMatchObject({ state: "succeeded", failure: null });
      expect(held.reconciliation).toBeUndefined();
    } finally {
      server.child.kill("SIGCONT");
      run.kill("SIGKILL");
      server.child.kill("SIGKILL");
    }
  }, 30_000);

  test("docket run beside a server frozen (SIGSTOP) mid-run: a second Ctrl-C stops it without waiting for the server, and a third still leaves its document, result file and step outputs", async () => {
    const checkout = tempCheckout();
    // Ignores the first Ctrl-C: only the second one stops it.
    writeFiles(checkout, {
      "capabilities/team.stubborn.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "team.stubborn", title: "Stubborn", description: "Ignores cancel.", effect: "read", input: v.object({}), output: v.object({ done: v.boolean() }), async handler() { console.log("stubborn start"); await new Promise((r) => setTimeout(r, 60_000)); return { done: true }; } });\n',
      "gh-output": "",
      "gh-summary": "",
    });
    const server = await serve(checkout);
    const github = { GITHUB_ACTIONS: "true", GITHUB_OUTPUT: join(checkout, "gh-output"), GITHUB_STEP_SUMMARY: join(checkout, "gh-summary"), DOCKET_GRACE_MS: "60000" };
    const run = spawnDocket(fromSource, ["run", "team.stubborn", "--format", "json", "--result-file", "result.json"], { cwd: checkout, env: github });
    const pastEcho = () => Bun.sleep(STOP_SIGNAL_ECHO_MS + 50);
    try {
      const stdout = new Response(run.stdout).text();
      const stderr = watchStream(run.stderr);
      await stderr.until(/reported to the server/);
      await stderr.until(/stubborn start/);
      server.child.kill("SIGSTOP");
      run.kill("SIGINT");
      await stderr.until(/press Ctrl-C again/);
      await pastEcho();
      run.kill("SIGINT");
      await stderr.until(/stopping now/);
      await pastEcho();
      // Before the fix the run still waited for the frozen server here, and this press left with nothing written.
      run.kill("SIGINT");
      expect(await run.exited).toBe(130);
      const document = oneJsonDocument(await stdout);
      expect(document.execution.state).toBe("cancelled");
      expect(JSON.parse(readFileSync(join(checkout, "result.json"), "utf8"))).toEqual(document);
      expect(readFileSync(join(checkout, "gh-output"), "utf8")).toContain(document.execution.id);
      expect(readFileSync(join(checkout, "gh-summary"), "utf8")).toContain("team.stubborn");
      const text = await stderr.done;
      expect(text).toContain("stopped by force");
      expect(text).not.toContain("within 3 s of this run's end");
    } finally {
      server.child.kill("SIGCONT");
      run.kill("SIGKILL");
      server.child.kill("SIGKILL");
    }
  }, 60_000);

  test("docket run started while its server is frozen (SIGSTOP) reports to it once it answers: the server holds the run, to its end", async () => {
    const checkout = tempCheckout();
    // Works until the test says it may end: the run is still going when the server answers again.
    writeFiles(checkout, {
      "capabilities/team.wait.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nimport { existsSync } from "node:fs";\nexport default capability({ id: "team.wait", title: "Wait", description: "Waits for a go file.", effect: "read", input: v.object({}), output: v.object({ went: v.boolean() }), async handler(_input, ctx) { while (!existsSync(ctx.root + "/go")) await new Promise((r) => setTimeout(r, 50)); return { went: true }; } });\n',
    });
    const server = await serve(checkout);
    const http = api(server.url);
    server.child.kill("SIGSTOP");
    const run = spawnDocket(fromSource, ["run", "team.wait", "--format", "json"], { cwd: checkout });
    try {
      const stdout = new Response(run.stdout).text();
      const stderr = watchStream(run.stderr);
      await stderr.until(/does not answer; this run goes on and reports to it once it answers/);
      server.child.kill("SIGCONT");
      // Before the fix the run took the silent server for none, and the server never heard of it.
      const held = await reportedBy(http, run.pid, "running");
      writeFileSync(join(checkout, "go"), "");
      expect(await run.exited).toBe(0);
      const document = oneJsonDocument(await stdout);
      expect(held.id).toBe(document.execution.id);
      const ended = await pollUntil(() => http.get(`/api/v1/executions/get?id=${held.id}`), (s) => s.state !== "running", "the server to hold the run's end");
      expect(ended).toMatchObject({ state: "succeeded", output: { went: true }, last_sequence: document.execution.last_sequence });
      const text = await stderr.done;
      expect(text).not.toContain("visible to this process alone");
      expect(text).toContain(`reported to the server at ${server.url}`);
    } finally {
      server.child.kill("SIGCONT");
      run.kill("SIGKILL");
      server.child.kill("SIGKILL");
    }
  }, 60_000);

  test("docket run --run-id beside a server frozen while it starts (its lock held, no lease yet) runs nothing: not 'no server' (tester Z1)", async () => {
    const { checkout, server } = await serveStillLoading();
    try {
      server.kill("SIGSTOP");
      expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(false);
      const ran = await docket(fromSource, ["run", "team.touch", "--run-id", "dup-1"], { cwd: checkout });
      expect(ran.code).toBe(1);
      // A server starting is waited for, a while: this one never goes on.
      // Two capability files, each given load_timeout_ms (5 s) twice: 20 s.
      expect(ran.stderr).toContain(`the docket server (pid ${server.pid}) serving this checkout is starting (loading its capability files); this run waits up to 20 s for it to answer`);
      expect(ran.stderr).toContain(`The docket server (pid ${server.pid}) serving this checkout did not finish starting within 20 s`);
      expect(ran.stderr).toContain("nothing ran");
      expect(existsSync(join(checkout, "touched.txt"))).toBe(false);
    } finally {
      server.kill("SIGCONT");
      server.kill("SIGKILL");
      await server.exited;
    }
  }, 60_000);

  test("docket run --run-id started while the server is still loading its capability files (`docket serve &` in the same CI step) waits for it and runs through it, once", async () => {
    const { checkout, server } = await serveStillLoading();
    try {
      expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(false);
      // By its file: the run loads that one file, not the slow one the server is loading.
      const run = () => docket(fromSource, ["run", "capabilities/team.touch.ts", "--run-id", "ci-1", "--format", "json"], { cwd: checkout });
      const ran = await run();
      // Before, the run refused within a few seconds: "does not answer … nothing ran".
      expect(ran.code).toBe(0);
      expect(ran.stderr).toContain(`the docket server (pid ${server.pid}) serving this checkout is starting`);
      expect(ran.stderr).toContain("reported to the server at http://127.0.0.1:");
      const id = oneJsonDocument(ran.stdout).execution.id;
      // The server kept the run_id: the same step again is that execution, and runs nothing.
      const again = await run();
      expect(again.code).toBe(0);
      expect(oneJsonDocument(again.stdout).execution.id).toBe(id);
      expect(again.stderr).toContain(`run_id ci-1 was already used for ${id}`);
      expect(readFileSync(join(checkout, "touched.txt"), "utf8")).toBe("ran\n");
    } finally {
      server.kill("SIGKILL");
      await server.exited;
    }
  }, 60_000);

  test("docket run without a run_id beside a server still loading its capability files goes on at once, names the server by its pid, and the server takes the reports it left", async () => {
    const { checkout, server } = await serveStillLoading();
    try {
      const ran = await docket(fromSource, ["run", "capabilities/team.touch.ts", "--format", "json"], { cwd: checkout });
      expect(ran.code).toBe(0);
      const id = oneJsonDocument(ran.stdout).execution.id;
      expect(ran.stderr).toContain(`the docket server (pid ${server.pid}) serving this checkout is starting (it has written no address yet); this run goes on and reports to it once it answers`);
      // Before, the run's thread waited up to 5 s for the lease, its handler running; and the server was named "(no address: …)".
      expect(ran.stderr).toContain(`the docket server (pid ${server.pid}), which has written no address yet, did not answer within 3 s of this run's end`);
      expect(ran.stderr).not.toContain("(no address");
      const url = (await watchStream(server.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
      const held = await pollUntil(() => api(url).get(`/api/v1/executions/get?id=${id}`).catch(() => null), (e) => e?.state === "succeeded", "the server to take the run's left reports");
      expect(held.actor).toMatchObject({ kind: "cli" });
    } finally {
      server.kill("SIGKILL");
      await server.exited;
    }
  }, 60_000);

  test("docket run --run-id beside a server whose .docket/ was deleted (git clean -fdX) runs nothing: the server still holds the checkout (tester Z3)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, {
      "capabilities/team.touch.ts": TOUCH,
    });
    const server = await serve(checkout);
    try {
      rmSync(join(checkout, ".docket"), { recursive: true, force: true });
      const ran = await docket(fromSource, ["run", "team.touch", "--run-id", "dup-2"], { cwd: checkout });
      expect(ran.code).toBe(1);
      expect(ran.stderr).toContain(`The docket server (pid ${server.child.pid}) serving this checkout`);
      expect(ran.stderr).toContain("nothing ran");
      expect(existsSync(join(checkout, "touched.txt"))).toBe(false);
      // A start the server tries to write finds the file gone; /healthz then quotes the store's
      // reason whole, with what to do at its end (it was cut at 200 characters, before it).
      await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "team.touch", input: {} }) });
      const health = await pollUntil(async () => (await fetch(`${server.url}/healthz`)).json() as Promise<any>, (h) => h.ok === false, "the store to find its file gone");
      expect(health.store.reason).toStartWith("<path> was removed while this server ran");
      expect(health.store.reason).toEndWith("Restart docket serve: it starts a new store there (the executions this one held are lost with the file; if the checkout was moved, a docket serve in its new place recovers them from the file that moved with it)");
    } finally {
      server.child.kill("SIGKILL");
      await server.child.exited;
    }
  }, 60_000);
  test("docket run --run-id whose first report waited in a server frozen (SIGSTOP) until after the run gave up holds nothing there: the same --run-id runs, once (tester R1)", async () => {
    const checkout = tempCheckout();
    // The file waits, while a run loads it, for the test to freeze the server: the run found it
    // answering already, so its first report goes to a frozen server. Armed once the server loaded it.
    const gate = tempDir("gate");
    const at = (name: string) => JSON.stringify(join(gate, name));
    writeFiles(checkout, {
      "capabilities/team.once.ts": `import { capability } from "docket";\nimport * as v from "valibot";\nimport { appendFileSync, existsSync, writeFileSync } from "node:fs";\nif (existsSync(${at("armed")})) {\n  writeFileSync(${at("loading")}, "");\n  while (!existsSync(${at("go")})) await Bun.sleep(10);\n}\nexport default capability({ id: "team.once", title: "Once", description: "Records each run.", effect: "write", input: v.object({}), output: v.object({}), handler(_input, ctx) { appendFileSync(ctx.root + "/runs.txt", "ran\\n"); return {}; } });\n`,
    });
    const server = await serve(checkout, ["--report-silence-ms", "1000"]);
    const http = api(server.url);
    const run = () => docket(fromSource, ["run", "team.once", "--format", "json", "--run-id", "ghost-1"], { cwd: checkout });
    try {
      writeFileSync(join(gate, "armed"), "");
      const gaveUp = run();
      await pollUntil(async () => existsSync(join(gate, "loading")), Boolean, "the run to load its capability file");
      // Answered once more: the run's own look-up, sent before the file began to load, was answered too.
      await http.get("/healthz");
      server.child.kill("SIGSTOP");
      writeFileSync(join(gate, "go"), "");
      const first = await gaveUp;
      expect(first.code).toBe(1);
      expect(first.stderr).toContain("did not answer this run's first report, so whether run_id ghost-1 was used already cannot be known; nothing ran");
      // Resumed after the run gave up and exited: the report that waited unread is read now.
      server.child.kill("SIGCONT");
      const again = await run();
      expect(again.stderr).not.toContain("was already used");
      expect(again.code).toBe(0);
      expect(oneJsonDocument(again.stdout).execution).toMatchObject({ state: "succeeded", run_id: "ghost-1" });
      expect(readFileSync(join(checkout, "runs.txt"), "utf8")).toBe("ran\n");
      // And it is the run_id's execution from now on: a third run is that one, and runs nothing.
      const third = await run();
      expect(third.code).toBe(0);
      expect(third.stderr).toContain("was already used");
      expect(readFileSync(join(checkout, "runs.txt"), "utf8")).toBe("ran\n");
      const { items } = await http.get("/api/v1/executions?limit=10");
      // The report read after its run exited was refused: no queued ghost holds the run_id.
      expect(items.filter((item: any) => item.run_id === "ghost-1").map((item: any) => item.state)).toEqual(["succeeded"]);
    } finally {
      server.child.kill("SIGCONT");
      server.child.kill("SIGKILL");
      await server.child.exited;
    }
  }, 60_000);
});

describe("a --run-id run whose server cannot take its first report", () => {
  test("docket run --run-id says what a server on a low disk answered, not that it did not answer; nothing ran (distribution tester, session 41)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/team.touch.ts": TOUCH });
    const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout, env: { DOCKET_DISK_FREE_FLOOR_BYTES: String(1024 * 1024 * 1024 * 1024) } });
    void new Response(child.stdout).text();
    try {
      await watchStream(child.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
      const run = await docket(fromSource, ["run", "team.touch", "--run-id", "low-1", "--format", "json"], { cwd: checkout });
      const document = oneJsonDocument(run.stdout);
      expect(document.failure.message).toContain("could not take this run's first report (HTTP 503");
      expect(document.failure.message).toContain("nothing ran. Run again once it takes reports (the same --run-id is safe).");
      expect(document.failure.message).not.toContain("did not answer");
      expect(run.stderr).not.toContain("does not answer");
      expect(document.failure.context.server_error_code).toBeString();
      expect(existsSync(join(checkout, "touched.txt"))).toBe(false);
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 30_000);
});

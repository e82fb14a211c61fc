// `docket executions …` from source, against a live server serving the checkout and without one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { lockCheckout } from "../../runtime/server/checkout-lock.ts";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { obeyedCommands } from "../_support/workflow-commands.ts";
import { docket, fromSource, oneJsonDocument, removeTempDirs, spawnDocket, tempCheckout, tempDir, watchStream, writeFiles } from "./_harness.ts";
import { api, pollUntil, serveCheckout } from "./_report-support.ts";

const UNKNOWN = "x-20260908T010203Z-0a1b2c3d";

/** Begins a step and waits in it until cancelled: a step still running when its execution ends. */
const STEP_WAIT = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "team.stepwait",
  title: "Step wait",
  description: "Waits in a step for its cancel.",
  effect: "read",
  cancellable: true,
  input: v.object({}),
  output: v.object({}),
  async handler(_input, ctx) {
    ctx.progress.step("wait", "Waiting for a cancel");
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
    throw ctx.progress.cancellation();
  },
});
`;

/** A capability whose texts hold workflow commands, as a hostile one would. */
const FORGES = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.forges",
  title: "Forges",
  description: "Says things a CI runner would obey.",
  effect: "read",
  input: v.object({}),
  output: v.string(),
  handler(_input, ctx) {
    ctx.progress.step("say", "Saying\\n::error::from a step title");
    ctx.progress.diagnostic({ severity: "warning", message: "found\\n::error title=forged::from a diagnostic" });
    ctx.progress.stepDone("say", true, "said\\n::error::from a step message");
    return "::error::from the output";
  },
});
`;

describe("docket executions beside a server that does not answer", () => {
  test("a stopped server holding the checkout is named as such, with how to resume it, not 'start one' (which it would refuse)", async () => {
    const checkout = tempCheckout();
    const serve = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    const stderr = watchStream(serve.stderr);
    await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    serve.kill("SIGSTOP");
    try {
      const result = await docket(fromSource, ["executions", "list"], { cwd: checkout });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`The docket server (pid ${serve.pid}) serving ${checkout} at http://127.0.0.1:`);
      expect(result.stderr).toContain(`Resume it (kill -CONT ${serve.pid}) or stop it`);
      expect(result.stderr).not.toContain("Start one");
    } finally {
      serve.kill("SIGCONT");
      serve.kill("SIGINT");
      await serve.exited;
    }
  }, 30_000);

  test("docket executions list just after `docket serve &` (the server still loading its capability files) waits for it and answers from it", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/team.slow.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nawait new Promise((r) => setTimeout(r, 3000));\nexport default capability({ id: "team.slow", title: "Slow", description: "Loads slowly.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n' });
    const serve = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    try {
      for (let i = 0; i < 400 && !existsSync(join(checkout, ".docket", "serve.lock")); i++) await Bun.sleep(25);
      expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(false);
      const result = await docket(fromSource, ["executions", "list", "--format", "json"], { cwd: checkout });
      // Before, it waited 5 s for the lease, then said the server had not written its address.
      expect(result.code).toBe(0);
      expect(result.stderr).toContain(`the docket server (pid ${serve.pid}) serving this checkout is starting`);
      expect(JSON.parse(result.stdout)).toMatchObject({ items: [] });
    } finally {
      serve.kill("SIGKILL");
      await serve.exited;
    }
  }, 30_000);

  test("a server holding the checkout that has written no address yet (starting) is said to be starting, not told to be killed (tester)", async () => {
    const checkout = tempCheckout();
    // Holds the checkout's lock as a server loading its capability files does, before its lease.
    const lock = lockCheckout(checkout)!;
    try {
      const result = await docket(fromSource, ["executions", "list"], { cwd: checkout });
      expect(result.code).toBe(1);
      // Waited for a while first, as one starting is (`docket serve &` just before).
      expect(result.stderr).toContain(`the docket server (pid ${process.pid}) serving this checkout is starting (loading its capability files); waiting up to 15 s for it to answer`);
      expect(result.stderr).toContain(`The docket server (pid ${process.pid}) holding ${checkout} has not written its address within 15 s: it is still starting`);
      expect(result.stderr).toContain(`Run this again once it prints "docket serving ${checkout} at …"`);
      expect(result.stderr).not.toContain("kill -CONT");
    } finally {
      lock.release();
    }
  }, 30_000);

  /**
   * `executions events --follow --format json` of a long execution on a `docket serve` of its own
   * (`serveArgs` added), and `signal` sent to that server once a step was printed: how the follow
   * ended — its exit code, the events it printed and its stderr.
   */
  async function followThenSignalServer(signal: "SIGSTOP" | "SIGKILL", serveArgs: string[] = []) {
    const checkout = tempCheckout();
    const serve = spawnDocket(fromSource, ["serve", "--port", "0", ...serveArgs], { cwd: checkout });
    const banner = await watchStream(serve.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
    const url = banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    const started = await api(url).post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 200 } });
    const id: string = started.body.execution.id;
    const child = spawnDocket(fromSource, ["executions", "events", id, "--follow", "--format", "json"], { cwd: checkout });
    try {
      const stdout = watchStream(child.stdout);
      await stdout.until(/"type":"execution\.step"/);
      serve.kill(signal);
      const code = await child.exited;
      const printed = (await stdout.done).trimEnd().split("\n").map((line) => JSON.parse(line));
      const stderr = await new Response(child.stderr).text();
      return { id, url, code, last: printed.at(-1).sequence as number, stderr };
    } finally {
      child.kill("SIGKILL");
      if (signal === "SIGSTOP") serve.kill("SIGCONT");
      serve.kill("SIGKILL");
      await serve.exited;
    }
  }

  test("docket executions events --follow of a server stopped meanwhile says, once two heartbeats are missed, that it does not answer and where to resume, exit 1", async () => {
    // A short heartbeat, so that two missed ones are a moment, not 40 s.
    const { id, url, code, last, stderr } = await followThenSignalServer("SIGSTOP", ["--heartbeat-ms", "500"]);
    // Before the fix it waited for ever, saying nothing.
    expect(code).toBe(1);
    expect(stderr).toContain(`Stopped following ${id}: the server at ${url} does not answer: nothing came on the live channel for 1 s`);
    expect(stderr).toContain(`follow again with --after ${last} once it answers`);
    // A missed heartbeat is said first, once: the follower is not left waiting in silence.
    const quiet = `nothing has come from the server at ${url} for `;
    expect(stderr.split(quiet)).toHaveLength(2);
    expect(stderr.indexOf(quiet)).toBeLessThan(stderr.indexOf("Stopped following"));
    expect(stderr).toContain("it may be stopped, frozen or too busy; waiting for it until 1 s have passed");
  }, 30_000);

  test("docket executions events --follow of a healthy server with a short heartbeat never says it went quiet (checking tester)", async () => {
    const checkout = tempCheckout();
    const serve = spawnDocket(fromSource, ["serve", "--port", "0", "--heartbeat-ms", "1000"], { cwd: checkout });
    try {
      const banner = await watchStream(serve.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
      const url = banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
      // Quiet stretches of 2.5 s: heartbeats fill them, each within 1.25 heartbeats of the last.
      const started = await api(url).post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 2, delay_ms: 2500 } });
      const followed = await docket(fromSource, ["executions", "events", started.body.execution.id, "--follow"], { cwd: checkout });
      expect(followed.code).toBe(0);
      // Before, said at 1.25 heartbeats, the most a quiet server may take: over and over.
      expect(followed.stderr).not.toContain("nothing has come from the server");
    } finally {
      serve.kill("SIGKILL");
      await serve.exited;
    }
  }, 30_000);

  test("docket executions events --follow of a server killed meanwhile says the live channel closed and where to resume, exit 1", async () => {
    const { id, code, last, stderr } = await followThenSignalServer("SIGKILL");
    expect(code).toBe(1);
    expect(stderr).toContain(`Stopped following ${id}: the live channel closed before ${id} ended`);
    // Before the fix it said nothing of where to resume.
    expect(stderr).toContain(`follow again with --after ${last}.`);
  }, 30_000);
});

describe("docket executions without a server", () => {
  let checkout = "";
  beforeAll(() => {
    checkout = tempCheckout();
  });
  afterAll(removeTempDirs);
  const cli = (args: string[]) => docket(fromSource, ["executions", ...args], { cwd: checkout });

  test("docket executions list says no server serves the checkout and how to start one, exit 1", async () => {
    const result = await cli(["list"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`No docket server serves ${checkout}`);
    expect(result.stderr).toContain("docket serve");
  });

  test("docket executions … --format json without a server prints one {error} document with unavailable", async () => {
    for (const args of [["list"], ["show", UNKNOWN], ["events", UNKNOWN, "--follow"], ["cancel", UNKNOWN], ["protocol"]]) {
      const result = await cli([...args, "--format", "json"]);
      expect(result.code).toBe(1);
      expect(oneJsonDocument(result.stdout)).toMatchObject({ error: { error_code: "unavailable", context: { root: checkout } } });
    }
  });

  test("docket executions refuses a bad id shape or flag with exit 2 before asking anything", async () => {
    for (const args of [["show", "nope"], ["events", "x-1"], ["cancel", "X-20260908T010203Z-0A1B2C3D"], ["show", "x-20261306T150621Z-d36daac4"]]) {
      const result = await cli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("is not an execution id");
      // The shape is refused first: nothing was asked of a server (there is none to ask).
      expect(result.stderr).not.toContain("No docket server");
    }
    // A date of no moment is told which part (checking tester, session 48: the example had its very shape).
    expect((await cli(["show", "x-20260230T000000Z-0a1b2c3d"])).stderr).toContain("its UTC date and time, yyyymmddThhmmss, name no moment (2026-02 has no day 30); ids look like");
    expect((await cli(["list", "--limit", "0"])).stderr).toContain("--limit must be a whole number from 1 to 500");
    expect((await cli(["events", UNKNOWN, "--after", "-1"])).code).toBe(2);
    // As the API and /events refuse it (executions tester, session 47: the CLI trimmed it).
    expect((await cli(["events", UNKNOWN, "--after", " 5"])).stderr).toContain('--after must be a whole number from 0 to 9007199254740991, got " 5".');
    expect((await cli(["list", "--state", "sleeping"])).code).toBe(2);
  });

  for (const [command, example] of [
    [["executions"], "docket executions list --state running"],
    [["executions", "list"], "docket executions list --state running --capability files.digest --limit 20 --format json"],
    [["executions", "show"], "docket executions show x-20260908T010203Z-0a1b2c3d"],
    [["executions", "events"], "docket executions events x-20260908T010203Z-0a1b2c3d --after 42 --follow --format json"],
    [["executions", "cancel"], "docket executions cancel x-20260908T010203Z-0a1b2c3d"],
    [["executions", "protocol"], "docket executions protocol --format json > protocol.json"],
  ] as Array<[string[], string]>) {
    test(`docket ${command.join(" ")} --help names the command, an example and the exit codes`, async () => {
      const result = await docket(fromSource, [...command, "--help"], { cwd: checkout });
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`USAGE docket ${command.join(" ")}`);
      expect(result.stdout).toContain(example);
      if (command.length > 1) expect(result.stdout).toContain("Exit codes: 0 done, 1 no server serves the checkout or the server refused, 2 usage");
    });
  }
});

describe("docket executions against the server serving the checkout", () => {
  let checkout = "";
  let server: DocketServer;
  let http: ReturnType<typeof api>;
  let own = "";
  let reported = "";
  let reporter = 0;

  beforeAll(async () => {
    checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/team.stepwait.ts": STEP_WAIT });
    // Served in this process: its capability file imports "docket", served as the binary serves it.
    registerDocketModules();
    server = await serveCheckout(checkout);
    http = api(server.url);
    // One execution the server ran itself, one a docket run reported.
    const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 } });
    own = started.body.execution.id;
    const run = await docket(fromSource, ["run", "executions.demonstrate", "--input", '{"steps":2,"delay_ms":0}', "--format", "json"], { cwd: checkout });
    const document = oneJsonDocument(run.stdout);
    reported = document.execution.id;
    reporter = document.execution.actor.pid;
    await pollUntil(() => http.get(`/api/v1/executions/get?id=${own}`), (s) => s.state === "succeeded", "the server's own execution to finish");
  });
  afterAll(async () => {
    await server.stop();
    removeTempDirs();
  });
  const cli = (args: string[], env?: Record<string, string>) => docket(fromSource, ["executions", ...args], { cwd: checkout, env });

  test("docket executions list shows the server's own executions and reported ones, with who started them", async () => {
    const result = await cli(["list"]);
    expect(result.code).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toMatch(/^ID +STATE +CAPABILITY +ACTOR +CREATED \(UTC\) +DURATION$/);
    expect(lines.find((l) => l.startsWith(reported))).toMatch(new RegExp(`succeeded +executions\\.demonstrate +cli ${reporter} `));
    expect(lines.find((l) => l.startsWith(own))).toMatch(/succeeded +executions\.demonstrate +http /);
    expect(result.stdout).toContain("succeeded 2");
    const json = oneJsonDocument((await cli(["list", "--state", "succeeded", "--capability", "executions.demonstrate", "--limit", "1", "--format", "json"])).stdout);
    expect(json.items).toHaveLength(1);
    expect(json.next_cursor).not.toBeNull();
    expect(oneJsonDocument((await cli(["list", "--state", "failed", "--format", "json"])).stdout).items).toEqual([]);
  });

  test("docket executions show prints the facts of one execution; --format json is the server's snapshot", async () => {
    const text = await cli(["show", reported]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`${reported} — executions.demonstrate`);
    expect(text.stdout).toContain(`state: succeeded · started by cli ${reporter}`);
    expect(text.stdout).toContain("✔ step-2 — Step 2 of 2");
    expect(text.stdout).toContain('"message": "Completed 2 steps and 0 events"');
    expect(text.stdout).toContain(`cockpit: ${server.url}/cockpit/executions/${reported}`);
    const json = await cli(["show", reported, "--format", "json"]);
    expect(oneJsonDocument(json.stdout)).toEqual(await http.get(`/api/v1/executions/get?id=${reported}`));
  });

  test("docket executions show, events (--follow) and cancel of an unknown execution exit 2 with not_found", async () => {
    for (const args of [["show", UNKNOWN], ["events", UNKNOWN], ["events", UNKNOWN, "--follow"], ["cancel", UNKNOWN]]) {
      const result = await cli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`error not_found: No execution ${UNKNOWN}.`);
    }
  });

  test("docket executions events prints the events after a cursor, as lines or one JSON event per line", async () => {
    const text = await cli(["events", reported]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^\d\d:\d\d:\d\d ▸ executions\.demonstrate x-/m);
    expect(text.stdout).toMatch(/✔ succeeded in /);
    const json = await cli(["events", reported, "--after", "3", "--format", "json"]);
    const events = json.stdout.trimEnd().split("\n").map((line) => JSON.parse(line));
    const { last_sequence } = await http.get(`/api/v1/executions/get?id=${reported}`);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: last_sequence - 3 }, (_, i) => i + 4));
  });

  test("docket executions events --follow prints a running execution's events live and exits once it completed", async () => {
    const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 8, delay_ms: 150 } });
    const id = started.body.execution.id;
    const child = spawnDocket(fromSource, ["executions", "events", id, "--follow", "--format", "json"], { cwd: checkout });
    try {
      const stdout = watchStream(child.stdout);
      // A line of the run appears before it ends: followed live, not read back afterwards.
      await stdout.until(/"type":"execution\.step"/);
      expect((await http.get(`/api/v1/executions/get?id=${id}`)).state).not.toBe("succeeded");
      expect(await child.exited).toBe(0);
      const events = (await stdout.done).trimEnd().split("\n").map((line) => JSON.parse(line));
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
      expect(events.at(-1)).toMatchObject({ type: "execution.completed", data: { state: "succeeded" } });
    } finally {
      child.kill("SIGKILL");
    }
  });

  test("docket executions events --follow from an ended execution's last sequence (or past it) exits at once with nothing to print; past a running one's end it is a usage error (tester)", async () => {
    const { last_sequence } = await http.get(`/api/v1/executions/get?id=${own}`);
    for (const after of [last_sequence, last_sequence + 5]) {
      const ended = await cli(["events", own, "--follow", "--after", String(after), "--format", "json"]);
      expect(ended.code).toBe(0);
      expect(ended.stdout).toBe("");
    }
    // One event short of its end: its completion is printed, and the follow ends.
    const tail = await cli(["events", own, "--follow", "--after", String(last_sequence - 1), "--format", "json"]);
    expect(tail.code).toBe(0);
    expect(JSON.parse(tail.stdout)).toMatchObject({ type: "execution.completed", sequence: last_sequence });
    const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 100 } });
    const id = started.body.execution.id;
    try {
      const past = await cli(["events", id, "--follow", "--after", "100000"]);
      expect(past.code).toBe(2);
      expect(past.stderr).toMatch(new RegExp(`--after 100000 is past the last event of ${id} \\(sequence \\d+, (queued|running)\\)`));
    } finally {
      await http.post("/api/v1/executions/cancel", { id });
    }
  });

  test("docket executions cancel asks a running execution to stop (exit 0); of a finished one it says why not (exit 1)", async () => {
    const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 100 } });
    const id = started.body.execution.id;
    await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (s) => s.state === "running", "the execution to run");
    const cancelled = await cli(["cancel", id]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toContain("cancel requested");
    await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (s) => s.state === "cancelled", "the execution to stop");
    const again = await cli(["cancel", reported, "--format", "json"]);
    expect(again.code).toBe(1);
    expect(oneJsonDocument(again.stdout)).toMatchObject({ id: reported, state: "succeeded", requested: false });
  });

  test("docket executions show prints a step still running when its execution ended as stopped, not running, as the cockpit shows it", async () => {
    const started = await http.post("/api/v1/executions/start", { capability: "team.stepwait", input: {} });
    expect(started.status).toBe(200);
    const id = started.body.execution.id;
    await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (s) => s.steps?.length === 1, "the step to begin");
    expect((await cli(["show", id])).stdout).toContain("  ▸ wait — Waiting for a cancel");
    expect((await cli(["cancel", id])).code).toBe(0);
    await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (s) => s.state === "cancelled", "the execution to stop");
    const shown = (await cli(["show", id])).stdout;
    expect(shown).toContain("  ■ wait — Waiting for a cancel (stopped: the execution ended before this step did)");
    expect(shown).not.toContain("▸");
    // Who asked it to stop (docket executions cancel asks over HTTP), and when, kept after the end.
    expect(shown).toMatch(/\ncancel requested by http \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)\n/);
  });

  test("docket executions show says an execution was asked to stop because its deadline passed, not only 'cancelling' (checking tester, session 42)", async () => {
    const started = await http.post("/api/v1/executions/start", { capability: "team.stepwait", input: {}, deadline_ms: 300 });
    expect(started.status).toBe(200);
    const id = started.body.execution.id;
    const ended = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (s) => s.finished_at !== null, "the deadline to end it");
    expect(ended.cancel_requested).toMatchObject({ reason: "deadline_ms" });
    const shown = (await cli(["show", id])).stdout;
    // Ended: said as what happened (checking tester).
    expect(shown).toMatch(/\ndeadline_ms passed: the handler was asked to stop \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)\n/);
    expect(oneJsonDocument((await cli(["show", id, "--format", "json"])).stdout).cancel_requested).toEqual(ended.cancel_requested);
  });

  test("docket executions protocol prints the contract in force; --format json is the whole document", async () => {
    const text = await cli(["protocol"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("schema_version 1");
    expect(text.stdout).toContain("execution.cancel_requested");
    expect(text.stdout).toContain("stream.lagged");
    expect(text.stdout).toContain("report_silence_ms 30000");
    const json = oneJsonDocument((await cli(["protocol", "--format", "json"])).stdout);
    expect(json).toEqual(await http.get("/api/v1/executions/protocol"));
  });

  test("docket executions show and events in GitHub Actions print what an execution said as it is, and the runner obeys none of it", async () => {
    // Run and reported by docket run: the server only keeps what it said.
    const folder = tempDir("forges");
    writeFiles(folder, { "demo.forges.ts": FORGES });
    const ran = await docket(fromSource, ["run", join(folder, "demo.forges.ts"), "--format", "json"], { cwd: checkout });
    const id = oneJsonDocument(ran.stdout).execution.id;
    for (const args of [["show", id], ["events", id]]) {
      const plain = await cli(args);
      expect(plain.code).toBe(0);
      expect(plain.stdout).toContain("::error title=forged::from a diagnostic");
      const inCi = await cli(args, { GITHUB_ACTIONS: "true" });
      expect(inCi.code).toBe(0);
      expect(inCi.stdout).toContain("::error title=forged::from a diagnostic");
      expect(obeyedCommands(inCi.stdout)).toEqual([]);
    }
  });
});

describe("docket executions against a server that requires a token", () => {
  test("docket executions takes the token from the lease: list, and events --follow over the live channel", async () => {
    const checkout = tempCheckout();
    const token = "an-executions-token-0123456789";
    const server = await serveCheckout(checkout, { token });
    try {
      const started = await api(server.url, token).post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 } });
      const id = started.body.execution.id;
      const listed = await docket(fromSource, ["executions", "list", "--format", "json"], { cwd: checkout });
      expect(listed.code).toBe(0);
      expect(oneJsonDocument(listed.stdout).items.map((e: any) => e.id)).toEqual([id]);
      const followed = await docket(fromSource, ["executions", "events", id, "--follow"], { cwd: checkout });
      expect(followed.code).toBe(0);
      expect(followed.stdout).toMatch(/✔ succeeded in /);
    } finally {
      await server.stop();
      removeTempDirs();
    }
  });

  // A subprotocol name is an HTTP token: base64's `/ + =` made the WebSocket refuse to open (a
  // stack trace), and a `,` split the offer in two (401), while the run was live (serve tester).
  test.each([["base64", "q3xR/8Yb+Zk2mN4pQ7sT9vW1="], ["a comma", "abc,defghijklmnopqrst"]])("a token holding %s follows a live execution over the live channel", async (_, token) => {
    const checkout = tempCheckout();
    const server = await serveCheckout(checkout, { token });
    try {
      const started = await api(server.url, token).post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 3, delay_ms: 600 } });
      const id = started.body.execution.id;
      const followed = await docket(fromSource, ["executions", "events", id, "--follow"], { cwd: checkout });
      expect(followed.stderr).not.toMatch(/unexpected error|SyntaxError/);
      expect(followed.code).toBe(0);
      expect(followed.stdout).toMatch(/✔ succeeded in /);
      expect(followed.stdout + followed.stderr).not.toContain(token);
    } finally {
      await server.stop();
      removeTempDirs();
    }
  });
});

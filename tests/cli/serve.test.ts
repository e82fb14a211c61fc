// `docket serve` from source: it starts, answers, refuses a second server on the checkout, stops on Ctrl-C.
import { afterAll, describe, expect, test } from "bun:test";
import { closeSync, constants, existsSync, openSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import { docket, fromSource, oneJsonDocument, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

/** Resolves once the server of `checkout` answers /healthz (its lease names it): past start-up, where its signals are taken. */
async function untilServing(checkout: string): Promise<void> {
  const lease = join(checkout, ".docket", "lease.json");
  // A bound on a broken build: 40 files that fail their trial loads, one worker each, took 20 s
  // to start under a CI run's load.
  for (let i = 0; i < 3000; i++) {
    const url = existsSync(lease) ? ((JSON.parse(readFileSync(lease, "utf8") || "{}") as { url?: string }).url ?? null) : null;
    if (url !== null && (await fetch(`${url}/healthz`).catch(() => null))?.ok) return;
    await Bun.sleep(20);
  }
  throw new Error(`the server of ${checkout} did not answer within 60 s`);
}

describe("docket serve", () => {
  test("serves the checkout, refuses a second server with exit 2, and stops cleanly on Ctrl-C", async () => {
    const checkout = tempCheckout();
    const child = spawnDocket(fromSource, ["serve", "--port", "0", "--max-concurrent", "1"], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    const url = banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    try {
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true });
      expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(true);

      const second = await docket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`Cannot serve: Another docket server (pid ${child.pid}) already serves ${checkout} at ${url}`);
    } finally {
      child.kill("SIGINT");
    }
    expect(await child.exited).toBe(0);
    expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(false);
  });

  test.skipIf(process.platform !== "linux")("stopped while whoever reads its stderr is behind, it exits once every line arrived, the last saying it stopped; on a full disk never with 0 (tester R1)", async () => {
    // 40 files that do not load: ~120 KB of log lines, more than a pipe holds.
    const files = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`capabilities/bad.n${i}.ts`, `throw new Error("file ${i} ${"x".repeat(3000)}");\n`]));
    const checkout = tempCheckout();
    writeFiles(checkout, files);
    const fifo = join(checkout, "stderr.fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeEnd = openSync(fifo, constants.O_WRONLY);
    const child = Bun.spawn([...fromSource.argv(), "serve", "--port", "0"], { cwd: checkout, stdin: "ignore", stdout: "ignore", stderr: writeEnd });
    let full: ReturnType<typeof Bun.spawn> | null = null;
    try {
      closeSync(writeEnd);
      // Answering: past start-up, where the signals are taken.
      await untilServing(checkout);
      // Nobody has read a byte yet: most of the log waits in the server.
      child.kill("SIGTERM");
      const chunks: Buffer[] = [];
      const buffer = Buffer.alloc(1 << 16);
      let exited = false;
      void child.exited.then(() => (exited = true));
      while (!exited) {
        try {
          const read = readSync(readEnd, buffer, 0, buffer.length, null);
          if (read > 0) chunks.push(Buffer.from(buffer.subarray(0, read)));
        } catch {
          // Nothing to read at this moment.
        }
        await Bun.sleep(5);
      }
      closeSync(readEnd);
      const log = Buffer.concat(chunks).toString("utf8");
      expect(await child.exited).toBe(0);
      for (let i = 0; i < 40; i++) expect(log).toContain(`file ${i} x`);
      expect(log.trimEnd().split("\n").at(-1)).toBe("docket: SIGTERM, stopping");

      // Its lines lost to a full disk: the stop is no clean exit.
      const fullCheckout = tempCheckout();
      const devFull = openSync("/dev/full", "w");
      full = Bun.spawn([...fromSource.argv(), "serve", "--port", "0"], { cwd: fullCheckout, stdin: "ignore", stdout: "ignore", stderr: devFull });
      closeSync(devFull);
      await untilServing(fullCheckout);
      full.kill("SIGTERM");
      expect(await full.exited).toBe(1);
    } finally {
      // A failed expectation leaves no server behind (it waits for a reader that is gone).
      for (const server of [child, full]) if (server !== null && server.exitCode === null) server.kill("SIGKILL");
    }
  }, 120_000);

  // Linux only: elsewhere docket cannot tell whether it was started under nohup, and leaves hang-ups alone (stop-signals.ts).
  test.skipIf(process.platform !== "linux")(
    "stops cleanly on a hang-up (its terminal or SSH session went away): the lease is removed",
    async () => {
      const checkout = tempCheckout();
      const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
      const stderr = watchStream(child.stderr);
      const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
      // Answering: past start-up, where the signals are taken.
      expect(await (await fetch(`${banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]}/healthz`)).json()).toEqual({ ok: true });
      child.kill("SIGHUP");
      expect(await child.exited).toBe(0);
      expect(await stderr.done).toContain("docket: SIGHUP, stopping");
      expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(false);
    },
  );

  test("a capability file's top level cannot signal the server from its main thread either (what it defers runs there)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, {
      "capabilities/team.signals.ts": `import { capability } from "docket";
import * as v from "valibot";
import { readdirSync } from "node:fs";
import { Worker } from "node:worker_threads";
Promise.resolve().then(() => {
  try {
    process.kill(process.pid, "SIGTERM");
  } catch (error) {
    console.error("TOP-LEVEL KILL", (error as NodeJS.ErrnoException).code);
  }
  // Another thread's id is the process too.
  try {
    process.kill(readdirSync("/proc/" + process.pid + "/task").map(Number).find((tid) => tid !== process.pid)!, "SIGTERM");
  } catch (error) {
    console.error("THREAD KILL", (error as NodeJS.ErrnoException).code);
  }
});
// A thread the top level starts gets the guard too.
const thread = new Worker('const { parentPort } = require("node:worker_threads"); try { process.kill(process.pid, "SIGTERM") } catch (error) { parentPort.postMessage(error.code) }', { eval: true });
thread.on("message", (code) => (console.error("STARTED THREAD KILL", code), thread.terminate()));
export default capability({ id: "team.signals", title: "Signals", description: "Signals at load.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });
`,
    });
    const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    try {
      // Refused in the trial's worker and on the main thread, which imported the file before it served.
      await stderr.until(/TOP-LEVEL KILL EPERM/);
      if (process.platform === "linux") await stderr.until(/THREAD KILL EPERM/);
      await stderr.until(/STARTED THREAD KILL EPERM/);
      expect(await (await fetch(`${banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]}/healthz`)).json()).toEqual({ ok: true });
    } finally {
      child.kill("SIGINT");
    }
    expect(await child.exited).toBe(0);
  });

  test("a limit flag out of range exits 2 naming the flag and its range", async () => {
    const result = await docket(fromSource, ["serve", "--port", "0", "--heartbeat-ms", "1"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--heartbeat-ms (quiet time before a heartbeat) must be a whole number from 10 to 3600000, got "1".');
  });

  test("a --host that is no address of this machine exits 2 saying so, without a stack (tester R)", async () => {
    for (const [host, code] of [["999.1.1.1", "EINVAL"], ["192.0.2.1", "EADDRNOTAVAIL"]] as const) {
      const result = await docket(fromSource, ["serve", "--port", "0", "--host", host], { cwd: tempCheckout() });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`Cannot serve: cannot listen on --host ${host} (${code}): it is not an address of this machine.`);
      expect(result.stderr).not.toContain("unexpected error");
      expect(result.stderr).not.toMatch(/^\s+at /m);
    }
  });

  test("a mistyped DOCKET_* limit variable is named at start with the one it may mean; the server still serves (serve tester, session 46)", async () => {
    const child = spawnDocket(fromSource, ["serve", "--port", "0", "--store", "memory"], { cwd: tempCheckout(), env: { DOCKET_HEARBEAT_MS: "100" } });
    const stderr = watchStream(child.stderr);
    try {
      await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
      expect(await stderr.until(/DOCKET_HEARBEAT_MS/)).toContain("DOCKET_HEARBEAT_MS is not a setting of docket and is ignored; did you mean DOCKET_HEARTBEAT_MS?");
    } finally {
      child.kill("SIGINT");
      await child.exited;
    }
  });

  test("DOCKET_TOKEN gives the token from the environment: required on every route, and not in the process's arguments (tester S)", async () => {
    const token = "env-token-0123456789abcdef";
    const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: tempCheckout(), env: { DOCKET_TOKEN: token } });
    const stderr = watchStream(child.stderr);
    try {
      const url = (await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
      expect((await fetch(`${url}/api/v1/capabilities/list`)).status).toBe(401);
      expect((await fetch(`${url}/api/v1/capabilities/list`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
      const { readFileSync } = await import("node:fs");
      expect(readFileSync(`/proc/${child.pid}/cmdline`, "utf8")).not.toContain(token);
    } finally {
      child.kill("SIGINT");
      await child.exited;
    }
  });

  test("DOCKET_TOKEN is not passed on to handlers nor to the children they run", async () => {
    const token = "env-token-kept-from-handlers-0123";
    const checkout = tempCheckout();
    writeFiles(checkout, {
      "capabilities/env.dump.ts": `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "env.dump", title: "Env", description: "What the handler and its child see.", effect: "read",
  input: v.object({}), output: v.object({ own: v.array(v.string()), child: v.array(v.string()) }),
  async handler(_input, ctx) {
    const child = await ctx.exec(["sh", "-c", "env"]);
    const names = (lines: string[]) => lines.map((line) => line.split("=")[0]!).filter((name) => name === "PATH" || name.startsWith("DOCKET_TOKEN"));
    return { own: names(Object.keys(process.env)), child: names(child.stdout.split("\\n")) };
  },
});
`,
    });
    const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout, env: { DOCKET_TOKEN: token } });
    const stderr = watchStream(child.stderr);
    try {
      const url = (await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
      const answer = await fetch(`${url}/api/v1/env/dump`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: "{}" });
      expect(answer.status).toBe(200);
      // PATH, which both do see, says the handler read its environment and its child printed one.
      expect(await answer.json()).toEqual({ own: ["PATH"], child: ["PATH"] });
    } finally {
      child.kill("SIGINT");
      await child.exited;
    }
    // Nor from a shell that exported it to start its server: docket run, without and beside that server (tester, session 33).
    for (const beside of [false, true]) {
      const server = beside ? spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout, env: { DOCKET_TOKEN: token } }) : null;
      try {
        if (server) await watchStream(server.stderr).until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
        const run = await docket(fromSource, ["run", "env.dump", "--format", "json"], { cwd: checkout, env: { DOCKET_TOKEN: token } });
        expect({ beside, code: run.code, output: oneJsonDocument(run.stdout).output }).toEqual({ beside, code: 0, output: { own: ["PATH"], child: ["PATH"] } });
      } finally {
        server?.kill("SIGINT");
        await server?.exited;
      }
    }
  });

  test("DOCKET_TOKEN set but empty is refused, not served without a token; --host [::1] is ::1, its URL bracketed once (tester T)", async () => {
    const empty = await docket(fromSource, ["serve", "--port", "0"], { cwd: tempCheckout(), env: { DOCKET_TOKEN: " " } });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("Cannot serve: DOCKET_TOKEN is set but empty");
    for (const host of ["[::1", "[[::1]]"]) {
      const bad = await docket(fromSource, ["serve", "--port", "0", "--host", host], { cwd: tempCheckout() });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`--host must be an address or a name of this machine, like 127.0.0.1, ::1 or localhost, got ${JSON.stringify(host)}.`);
    }
    const child = spawnDocket(fromSource, ["serve", "--port", "0", "--host", "[::1]"], { cwd: tempCheckout() });
    try {
      const banner = await watchStream(child.stderr).until(/docket serving .* at http:\/\/\S+/);
      const url = banner.match(/at (http:\/\/\S+)/)![1]!;
      expect(url).toMatch(/^http:\/\/\[::1\]:\d+$/);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      child.kill("SIGINT");
      await child.exited;
    }
  });

  test("a port taken exits 2 naming who holds it — another checkout's docket server, or another process — and the way out (--port 0)", async () => {
    const other = tempCheckout();
    const child = spawnDocket(fromSource, ["serve", "--port", "0", "--store", "memory"], { cwd: other });
    const banner = await watchStream(child.stderr).until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    const port = Number(banner.match(/at http:\/\/127\.0\.0\.1:(\d+)/)![1]);
    try {
      const taken = await docket(fromSource, ["serve", "--port", String(port), "--store", "memory"], { cwd: tempCheckout() });
      expect(taken.code).toBe(2);
      expect(taken.stderr).toContain(`Cannot serve: port ${port} on 127.0.0.1 is taken by another docket server (pid ${child.pid}, serving ${other}). Serve on another port — --port 0 takes a free one and prints its URL, or name one, such as --port ${port + 1} — or stop that server first.`);
      expect(taken.stderr).not.toContain("See docket serve --help");
    } finally {
      child.kill("SIGINT");
      await child.exited;
    }
    // Not docket: a plain listener says nothing docket knows.
    const plain = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("not docket") });
    try {
      const taken = await docket(fromSource, ["serve", "--port", String(plain.port), "--store", "memory"], { cwd: tempCheckout() });
      expect(taken.code).toBe(2);
      expect(taken.stderr).toContain(`Cannot serve: port ${plain.port} on 127.0.0.1 is taken by another process. Serve on another port — --port 0 takes a free one`);
    } finally {
      plain.stop(true);
    }
  });

  test("a bad --port exits 2", async () => {
    const result = await docket(fromSource, ["serve", "--port", "http"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--port must be a whole number from 0 to 65535, got "http".');
  });
});

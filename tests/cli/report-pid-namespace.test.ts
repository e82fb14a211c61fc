// docket run, mcp and executions in a pid namespace of their own (a container that shares the host's
// network but not its pids) beside a `docket serve` outside it (docs/protocol.md, "One plane per
// checkout"): the server's pid names nobody there, and /proc/locks (with a /proc of the namespace's
// own) lists no lock of it. Each is run twice: with a /proc of its own (--mount-proc) and with the host's.
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { docket, fromSource, oneJsonDocument, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles, type DocketRunner } from "./_harness.ts";
import { api, pollUntil } from "./_report-support.ts";

afterAll(removeTempDirs);

/** Why `unshare --pid` cannot be used here (not Linux, no util-linux, no privilege to make namespaces), or null. */
function unshareProblem(): string | null {
  if (process.platform !== "linux") return "pid namespaces are Linux's";
  const tried = spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "--kill-child", "true"], { encoding: "utf8" });
  if (tried.error) return `unshare cannot be started (${tried.error.message})`;
  return tried.status === 0 ? null : `unshare --pid --fork --mount-proc is not permitted here (${tried.stderr.trim() || `exit ${tried.status}`})`;
}

const problem = unshareProblem();
if (problem !== null) console.warn(`skipping the pid-namespace tests: ${problem}`);

/** docket from source in a new pid namespace, with a /proc of its own or the host's. */
function inPidNamespace(mountProc: boolean): DocketRunner {
  return { name: mountProc ? "own pid namespace, own /proc" : "own pid namespace, host's /proc", argv: () => ["unshare", "--pid", "--fork", "--kill-child", ...(mountProc ? ["--mount-proc"] : []), ...fromSource.argv()] };
}

/** `docket serve` outside the namespace, in a process of its own, and its URL once it serves. */
async function serve(checkout: string) {
  const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
  void new Response(child.stdout).text();
  const banner = await watchStream(child.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/).catch((error) => {
    child.kill("SIGKILL");
    throw error;
  });
  return { child, url: banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]! };
}

/** A write capability that appends a line per run: how many times it ran is in the file. */
function touchCheckout(): string {
  const checkout = tempCheckout();
  writeFiles(checkout, {
    "capabilities/team.touch.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nimport { appendFileSync } from "node:fs";\nexport default capability({ id: "team.touch", title: "Touch", description: "Writes a line.", effect: "write", input: v.object({ tag: v.string() }), output: v.object({}), handler(input, ctx) { appendFileSync(ctx.root + "/touched.txt", input.tag + "\\n"); return {}; } });\n',
  });
  return checkout;
}

const touched = (checkout: string) => (existsSync(join(checkout, "touched.txt")) ? readFileSync(join(checkout, "touched.txt"), "utf8") : "");

for (const mountProc of [true, false]) {
  const runner = inPidNamespace(mountProc);
  describe.skipIf(problem !== null)(`docket in another pid namespace than its server (${runner.name})`, () => {
    test("docket run --run-id with a run_id the server already ran is that execution: nothing runs twice", async () => {
      const checkout = touchCheckout();
      const server = await serve(checkout);
      try {
        const started = await api(server.url).post("/api/v1/executions/start", { capability: "team.touch", input: { tag: "DUP" }, run_id: "dup-ns" });
        expect(started.status).toBeLessThan(300);
        await pollUntil(() => api(server.url).get(`/api/v1/executions/get?id=${started.body.execution.id}`), (s) => s.state === "succeeded", "the server's start to end");
        const ran = await docket(runner, ["run", "team.touch", "--run-id", "dup-ns", "--input", '{"tag":"DUP"}', "--format", "json"], { cwd: checkout });
        // Before the fix the run took the server for none ("visible to this process alone") and ran again.
        expect(ran.stderr).toContain("was already used");
        expect(ran.stderr).not.toContain("visible to this process alone");
        expect(ran.code).toBe(0);
        expect(oneJsonDocument(ran.stdout)).toMatchObject({ deduplicated: true, execution: { id: started.body.execution.id } });
        expect(touched(checkout)).toBe("DUP\n");
      } finally {
        server.child.kill("SIGKILL");
        await server.child.exited;
      }
    }, 60_000);

    test("docket run reports to the server, which holds its execution to its end", async () => {
      const checkout = touchCheckout();
      const server = await serve(checkout);
      try {
        const ran = await docket(runner, ["run", "team.touch", "--input", '{"tag":"ONE"}', "--format", "json"], { cwd: checkout });
        expect(ran.code).toBe(0);
        expect(ran.stderr).not.toContain("visible to this process alone");
        expect(ran.stderr).not.toContain("has written no lease");
        const { execution } = oneJsonDocument(ran.stdout);
        const held = await pollUntil(() => api(server.url).get(`/api/v1/executions/get?id=${execution.id}`), (s) => s.state === "succeeded", "the server to hold the run's end");
        expect(held).toMatchObject({ state: "succeeded", actor: { kind: "cli" }, last_sequence: execution.last_sequence });
      } finally {
        server.child.kill("SIGKILL");
        await server.child.exited;
      }
    }, 60_000);

    test("docket run --run-id beside the server frozen (SIGSTOP) runs nothing, naming the server by its lease", async () => {
      const checkout = touchCheckout();
      const server = await serve(checkout);
      server.child.kill("SIGSTOP");
      try {
        const ran = await docket(runner, ["run", "team.touch", "--run-id", "frozen-ns", "--input", '{"tag":"TWICE"}'], { cwd: checkout });
        // Before the fix: with its own /proc the run saw no lock and ran; with the host's, it
        // waited 5 s for a lease that was there all along and named none.
        expect(ran.code).toBe(1);
        expect(ran.stderr).toContain(`The docket server (pid ${server.child.pid}) serving this checkout at ${server.url} does not answer`);
        expect(ran.stderr).toContain("nothing ran");
        expect(touched(checkout)).toBe("");
      } finally {
        server.child.kill("SIGCONT");
        server.child.kill("SIGKILL");
        await server.child.exited;
      }
    }, 60_000);

    test("docket executions list and docket mcp find the server", async () => {
      const checkout = touchCheckout();
      const server = await serve(checkout);
      try {
        const started = await api(server.url).post("/api/v1/executions/start", { capability: "team.touch", input: { tag: "LISTED" } });
        const listed = await docket(runner, ["executions", "list", "--format", "json"], { cwd: checkout });
        expect(listed.stderr).toBe("");
        expect(listed.code).toBe(0);
        expect(listed.stdout).toContain(started.body.execution.id);
        // stdin at its end at once: mcp says where it forwards, then ends with the session.
        const mcp = await docket(runner, ["mcp"], { cwd: checkout, stdin: "" });
        expect(mcp.stderr).toContain(`forwarding to the docket server at ${server.url}`);
      } finally {
        server.child.kill("SIGKILL");
        await server.child.exited;
      }
    }, 60_000);
  });
}

// What the CLI writes all arrives, or its exit code says it did not (README.md): a reader that is
// behind when the command ends still gets every line, a write that fails (a full disk) is said and
// exits non-zero, and a reader that leaves (`| head -1`) ends the command quietly.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cleanEnv, fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles } from "./_harness.ts";
import { api, pollUntil } from "./_report-support.ts";

/** Logs `lines` lines of 200 characters, then says a diagnostic and fails, or waits until cancelled. */
const CHATTY = `import { capability, CapabilityError } from "docket";
import * as v from "valibot";

export default capability({
  id: "test.chatty",
  title: "Chatty",
  description: "Logs many long lines, then fails, succeeds with a large output, or waits to be cancelled (ticking: a log line every 100 ms meanwhile).",
  effect: "read",
  cancellable: true,
  errors: ["it_broke"],
  input: v.object({ lines: v.number(), end: v.picklist(["fail", "succeed", "wait", "tick"]), outBytes: v.optional(v.number(), 0) }),
  output: v.object({ blob: v.string() }),
  async handler(input, ctx) {
    for (let i = 0; i < input.lines; i++) console.log(\`line \${i} \${"x".repeat(200)}\`);
    if (input.end === "fail") {
      ctx.progress.diagnostic({ severity: "error", message: "THE REAL PROBLEM", file: "a.ts", line: 3 });
      throw new CapabilityError("it_broke", "THE FAILURE MESSAGE");
    }
    while (input.end === "wait" && !ctx.progress.cancelled()) await new Promise((resolve) => setTimeout(resolve, 20));
    for (let tick = 0; input.end === "tick" && !ctx.progress.cancelled(); tick++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      console.log(\`tick \${tick}\`);
    }
    if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
    return { blob: "y".repeat(input.outBytes) };
  },
});
`;

/**
 * How long the reader of a pipe holds off before it reads (the `sleep` of `docket … | (sleep 1;
 * cat)`): long enough that a command which drops what the pipe has not taken yet has exited
 * meanwhile. It makes the backlog, nothing waits on it: a command that delivers everything waits
 * for the reader, and passes whatever this is. A pipe of the system, not one Bun.spawn reads
 * into memory as it comes, so that the backlog is real.
 */
const HOLD_OFF_S = 1.5;

type Stream = "stdout" | "stderr";

/** Runs docket with one stream into a pipe whose reader is behind; the other stream is discarded. */
async function behindReader(args: string[], cwd: string, read: Stream): Promise<{ code: number; text: string }> {
  const streams = read === "stdout" ? "2>/dev/null" : "2>&1 >/dev/null";
  const script = `"$@" ${streams} | { sleep ${HOLD_OFF_S}; cat; }; exit "\${PIPESTATUS[0]}"`;
  const child = Bun.spawn(["bash", "-c", script, "bash", ...fromSource.argv(), ...args], { cwd, env: cleanEnv(), stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  const [text, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  return { code, text };
}

/** Runs docket with stdout to a file descriptor of the test's (a file, /dev/full), stderr collected. */
async function stdoutTo(fd: number, args: string[], cwd: string, shell = ""): Promise<{ code: number; stderr: string }> {
  const argv = [...fromSource.argv(), ...args];
  // `trap "" XFSZ` first: a size limit (ulimit -f) then fails the write with EFBIG instead of killing the process.
  const command = shell ? ["sh", "-c", `trap "" XFSZ; ${shell}; exec "$@"`, "sh", ...argv] : argv;
  const child = Bun.spawn(command, { cwd, env: cleanEnv(), stdin: "ignore", stdout: fd, stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  return { code, stderr };
}

let checkout = "";

beforeAll(() => {
  checkout = tempCheckout();
  writeFiles(checkout, { "capabilities/test.chatty.ts": CHATTY });
});

afterAll(removeTempDirs);

/** Each command, its stdout on /dev/full, says so in one line (no stack) and exits 1, never 0. */
async function expectFullDiskSaid(commands: string[][]): Promise<void> {
  const full = openSync("/dev/full", "w");
  try {
    for (const args of commands) {
      const result = await stdoutTo(full, args, checkout);
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr).toContain("docket: could not write stdout: no space left on device (ENOSPC); what it holds is incomplete\n");
      expect(result.stderr).not.toContain("    at ");
    }
  } finally {
    closeSync(full);
  }
}

describe("docket run with a reader that is behind", () => {
  test("docket run delivers its whole stderr, the failure last, to a reader that is behind when it ends", async () => {
    const run = await behindReader(["run", "test.chatty", "--input", '{"lines":2000,"end":"fail"}'], checkout, "stderr");
    expect(run.code).toBe(1);
    const lines = run.text.trimEnd().split("\n");
    expect(lines.filter((line) => / info {2}line \d+ x{200}$/.test(line))).toHaveLength(2000);
    expect(run.text).toContain("error a.ts:3 THE REAL PROBLEM");
    expect(run.text).toContain("error it_broke: THE FAILURE MESSAGE");
    expect(lines.at(-1)).toMatch(/^ {2}correlation id c-/);
  }, 30_000);

  test("docket run --format json delivers its whole document to a reader that is behind", async () => {
    const run = await behindReader(["run", "test.chatty", "--input", '{"lines":1,"end":"succeed","outBytes":400000}', "--format", "json"], checkout, "stdout");
    expect(run.code).toBe(0);
    expect(JSON.parse(run.text).output.blob).toHaveLength(400_000);
  }, 30_000);
});

describe("docket executions against a server, with readers that are behind or leave", () => {
  // `docket serve` itself: a server in this process could not import a checkout's capability file.
  let serve: ReturnType<typeof spawnDocket>;
  let server: { url: string };
  let id = "";

  beforeAll(async () => {
    serve = spawnDocket(fromSource, ["serve", "--port", "0", "--no-watch"], { cwd: checkout });
    const said = await watchStream(serve.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
    server = { url: said.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]! };
    const started = await api(server.url).post("/api/v1/executions/start", { capability: "test.chatty", input: { lines: 3000, end: "succeed" } });
    id = started.body.execution.id;
    await pollUntil(() => api(server.url).get(`/api/v1/executions/get?id=${id}`), (s) => s.state === "succeeded", "the chatty execution to finish");
  }, 30_000);
  afterAll(async () => {
    serve.kill("SIGINT");
    await serve.exited;
  });

  test("docket executions events --format json delivers every event, one a line, to a reader that is behind", async () => {
    const { last_sequence } = await api(server.url).get(`/api/v1/executions/get?id=${id}`);
    const events = await behindReader(["executions", "events", id, "--format", "json"], checkout, "stdout");
    expect(events.code).toBe(0);
    const sequences = events.text.trimEnd().split("\n").map((line) => JSON.parse(line).sequence);
    expect(sequences).toEqual(Array.from({ length: last_sequence }, (_, i) => i + 1));
  }, 30_000);

  test("docket executions events as text delivers every line to a reader that is behind", async () => {
    const events = await behindReader(["executions", "events", id], checkout, "stdout");
    expect(events.code).toBe(0);
    expect(events.text.split("\n").filter((line) => / info {2}line \d+ x{200}$/.test(line))).toHaveLength(3000);
    expect(events.text).toMatch(/✔ succeeded in /);
  }, 30_000);

  test("docket executions list, show and events to a full disk say so on stderr in one line and exit 1", async () => {
    await expectFullDiskSaid([["executions", "list", "--format", "json"], ["executions", "show", id], ["executions", "events", id], ["executions", "events", id, "--format", "json"]]);
  }, 30_000);

  test("docket executions events | head -1 exits 0 without a word, and --follow of a quiet execution stops once its reader left", async () => {
    for (const format of ["text", "json"]) {
      const child = Bun.spawn([...fromSource.argv(), "executions", "events", id, "--format", format], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      // The reader takes the first chunk and leaves, as `head -1` does.
      const reader = child.stdout.getReader();
      await reader.read();
      await reader.cancel();
      const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
      expect({ format, code, stderr }).toEqual({ format, code: 0, stderr: "" });
    }
    // An execution that runs until cancelled and writes nothing more after its first lines: a
    // follow that kept going would never end, and no write of its own would find the reader gone.
    const waiting = await api(server.url).post("/api/v1/executions/start", { capability: "test.chatty", input: { lines: 50, end: "wait" } });
    const running = waiting.body.execution.id;
    try {
      await pollUntil(() => api(server.url).get(`/api/v1/executions/get?id=${running}`), (s) => s.last_sequence >= 50, "the waiting execution to log");
      const follow = Bun.spawn([...fromSource.argv(), "executions", "events", running, "--follow"], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      // The reader leaves once it has everything there is: the follow has nothing left to write.
      const reader = follow.stdout.getReader();
      let seen = "";
      while (!seen.includes("line 49 ")) {
        const chunk = await reader.read();
        if (chunk.done) break;
        seen += new TextDecoder().decode(chunk.value);
      }
      expect(seen).toContain("line 49 ");
      await reader.cancel();
      const [stderr, code] = await Promise.all([new Response(follow.stderr).text(), follow.exited]);
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
      expect((await api(server.url).get(`/api/v1/executions/get?id=${running}`)).state).toBe("running");
    } finally {
      await api(server.url).post("/api/v1/executions/cancel", { id: running });
    }
  }, 30_000);
});

describe("docket run and capabilities with stdout on a full disk", () => {
  test("docket run --format json and capabilities list to a full disk say so in one line and exit 1, never 0", async () => {
    await expectFullDiskSaid([["run", "test.chatty", "--input", '{"lines":1,"end":"succeed","outBytes":20000}', "--format", "json"], ["capabilities", "list"], ["capabilities", "show", "test.chatty", "--format", "json"]]);
  }, 30_000);

  test("docket run --result-file that cannot be written whole keeps the previous file, and leaves no partial one beside it", async () => {
    const dir = join(checkout, "results");
    writeFiles(dir, { "result.json": "previous\n" });
    const out = openSync(join(dir, "stdout.txt"), "w");
    try {
      // A file may grow to 1 block of 512 bytes: the document, with 20 kB of output, cannot.
      const result = await stdoutTo(out, ["run", "test.chatty", "--input", '{"lines":1,"end":"succeed","outBytes":20000}', "--result-file", join(dir, "result.json")], checkout, "ulimit -f 1");
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`docket: cannot write --result-file ${join(dir, "result.json")}: EFBIG`);
      expect(readFileSync(join(dir, "result.json"), "utf8")).toBe("previous\n");
      expect(readdirSync(dir).sort()).toEqual(["result.json", "stdout.txt"]);
      // stdout, a file under the same limit, was cut too: said as well.
      expect(result.stderr).toContain("docket: could not write stdout: file too large (EFBIG); what it holds is incomplete\n");
    } finally {
      closeSync(out);
    }
  }, 30_000);
});

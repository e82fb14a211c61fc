import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { openLogFile } from "../../runtime/server/log-file.ts";
import { startServer } from "../../runtime/server/serve.ts";
import { removeTempDirs, tempCheckout, writeFiles } from "../cli/_harness.ts";
import { api, pollUntil } from "../cli/_report-support.ts";

const dirs: string[] = [];
const tempLogDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "docket-logs-"));
  dirs.push(dir);
  return join(dir, "logs");
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  removeTempDirs();
});

const mode = (path: string) => statSync(path).mode & 0o777;
const at = new Date("2026-12-01T04:00:00.000Z");

describe("the server's log file", () => {
  test("a log file whose parent folder was replaced by a link (.docket/ removed, a link put there) is never made through it (checking tester, session 44)", () => {
    const dir = tempLogDir();
    const parent = join(dir, "..");
    const outside = mkdtempSync(join(tmpdir(), "docket-outside-"));
    dirs.push(outside);
    const errors: string[] = [];
    const log = openLogFile({ dir, files: 3, fileBytes: 1024, now: () => at, onError: (line) => errors.push(line) });
    log.write("before");
    rmSync(parent, { recursive: true, force: true });
    symlinkSync(outside, parent);
    log.write("after");
    log.close();
    expect(readdirSync(outside)).toEqual([]);
    expect(errors.join("\n")).toContain("is a symbolic link");
    rmSync(parent, { force: true });
  });

  test("a log file removed under the writer (.docket/ deleted) is made again at the next line, its folder too (MCP/CLI tester, session 44)", () => {
    const dir = tempLogDir();
    const log = openLogFile({ dir, files: 3, fileBytes: 1024, now: () => at });
    log.write("before");
    rmSync(dir, { recursive: true, force: true });
    log.write("after");
    log.close();
    expect(readFileSync(join(dir, "server.log"), "utf8")).toBe("2026-12-01T04:00:00.000Z after\n");
    expect(mode(dir)).toBe(0o700);
  });

  test("openLogFile appends stamped lines to server.log, 0600 in a 0700 folder, and narrows a folder made wider", () => {
    const dir = tempLogDir();
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const log = openLogFile({ dir, files: 3, fileBytes: 1024, now: () => at });
    log.write("first");
    log.write("[docket] c-0123 a stack\n    at somewhere");
    log.close();
    expect(readFileSync(join(dir, "server.log"), "utf8")).toBe("2026-12-01T04:00:00.000Z first\n2026-12-01T04:00:00.000Z [docket] c-0123 a stack\n    at somewhere\n");
    expect(mode(dir)).toBe(0o700);
    expect(mode(join(dir, "server.log"))).toBe(0o600);
    // Reopened, it appends: a restarted server keeps the earlier lines.
    const again = openLogFile({ dir, files: 3, fileBytes: 1024, now: () => at });
    again.write("after a restart");
    again.close();
    expect(readFileSync(join(dir, "server.log"), "utf8").split("\n").filter(Boolean)).toHaveLength(4);
  });

  test("openLogFile rotates at fileBytes and keeps `files` files in all, the oldest dropped, each within its bytes", () => {
    const dir = tempLogDir();
    const log = openLogFile({ dir, files: 3, fileBytes: 200, now: () => at });
    // 50 lines of ~40 bytes: ten files' worth; three are kept.
    for (let i = 0; i < 50; i++) log.write(`line ${String(i).padStart(2, "0")}`);
    log.close();
    expect(readdirSync(dir).sort()).toEqual(["server.log", "server.log.1", "server.log.2"]);
    const lines = (name: string) => readFileSync(join(dir, name), "utf8").split("\n").filter(Boolean).map((l) => l.slice(25));
    expect(lines("server.log").at(-1)).toBe("line 49");
    const kept = [...lines("server.log.2"), ...lines("server.log.1"), ...lines("server.log")];
    // What is kept is the newest lines, in order, none lost between the files.
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => `line ${String(50 - kept.length + i).padStart(2, "0")}`));
    for (const name of readdirSync(dir)) {
      expect(statSync(join(dir, name)).size).toBeLessThanOrEqual(200);
      expect(mode(join(dir, name))).toBe(0o600);
    }
    // A line longer than a file is cut to fit, and marked.
    const long = openLogFile({ dir, files: 3, fileBytes: 200, now: () => at });
    long.write("x".repeat(1000));
    long.close();
    const last = readFileSync(join(dir, "server.log"), "utf8");
    expect(Buffer.byteLength(last)).toBeLessThanOrEqual(200);
    expect(last).toEndWith("…(cut)\n");
  });

  test("openLogFile says once when it cannot write, never throws, and recovers by itself", () => {
    const dir = tempLogDir();
    const problems: string[] = [];
    const log = openLogFile({ dir, files: 2, fileBytes: 1024, now: () => at, onError: (line) => problems.push(line) });
    // Something that is not a file where the log goes: every open fails.
    mkdirSync(join(dir, "server.log"), { recursive: true });
    log.write("lost one");
    log.write("lost two");
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("could not write its log file");
    expect(problems[0]).toContain("goes on logging to stderr");
    rmSync(join(dir, "server.log"), { recursive: true });
    log.write("back");
    log.close();
    expect(readFileSync(join(dir, "server.log"), "utf8")).toBe("2026-12-01T04:00:00.000Z back\n");
  });

  test("openLogFile never writes through a symbolic link planted as the folder or the file", () => {
    const dir = tempLogDir();
    const elsewhere = tempLogDir();
    mkdirSync(elsewhere, { recursive: true });
    symlinkSync(elsewhere, dir);
    const problems: string[] = [];
    const log = openLogFile({ dir, files: 2, fileBytes: 1024, onError: (line) => problems.push(line) });
    log.write("where does this go");
    log.close();
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(problems[0]).toContain("is a symbolic link");

    const real = tempLogDir();
    mkdirSync(real, { recursive: true });
    symlinkSync(join(elsewhere, "target"), join(real, "server.log"));
    const again = openLogFile({ dir: real, files: 2, fileBytes: 1024, onError: (line) => problems.push(line) });
    again.write("nor this");
    again.close();
    expect(existsSync(join(elsewhere, "target"))).toBe(false);
    expect(problems).toHaveLength(2);
  });

  test("docket serve keeps what it says on stderr in .docket/logs/server.log: its start, and a handler's stack under its correlation id", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, {
      "capabilities/demo.boom.ts": `import { capability } from "docket";
import * as v from "valibot";
export default capability({ id: "demo.boom", title: "Boom", description: "Throws.", effect: "read", input: v.object({}), output: v.object({}),
  handler() { throw new Error("kaboom-in-the-handler"); } });
`,
    });
    registerDocketModules();
    const stderr: string[] = [];
    const server = await startServer({ cwd: checkout, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], token: null, runtime: "bun", importFile: (path) => import(path), log: (line) => stderr.push(line) });
    try {
      const http = api(server.url);
      const started = await http.post("/api/v1/executions/start", { capability: "demo.boom", input: {} });
      const failed = await pollUntil(() => http.get(`/api/v1/executions/get?id=${started.body.execution.id}`), (s) => s.state === "failed", "demo.boom to fail");
      const correlation = failed.failure.correlation_id as string;
      const path = join(checkout, ".docket", "logs", "server.log");
      const text = await pollUntil(async () => (existsSync(path) ? readFileSync(path, "utf8") : ""), (t) => t.includes(correlation), "the stack in the log file");
      expect(text).toContain(`docket serving ${checkout} at ${server.url}`);
      const line = text.split("\n").findIndex((l) => l.includes(correlation));
      expect(text.split("\n").slice(line, line + 3).join("\n")).toContain("kaboom-in-the-handler");
      // The same lines went to stderr, unstamped, as before.
      expect(stderr.some((l) => l.includes(correlation) && l.includes("kaboom-in-the-handler"))).toBe(true);
      expect(mode(path)).toBe(0o600);
      expect(mode(join(checkout, ".docket", "logs"))).toBe(0o700);
      // No client saw the stack.
      expect(JSON.stringify(failed)).not.toContain("kaboom-in-the-handler\n    at");
    } finally {
      await server.stop();
    }
  });
});

import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { withoutPaths } from "../../runtime/server/healthz.ts";
import { useDocketModules } from "../_support/capability-fixtures.ts";
import { fillDisk } from "../store/_sqlite-durability.ts";
import { SOURCE_FLAGS } from "../cli/_harness.ts";

// A real full disk: the checkout lives on a small tmpfs (root may mount one here; elsewhere the
// test is skipped and the engine's storage tests, with an injected fault, still run).
const mountPoint = mkdtempSync(join(tmpdir(), "docket-full-disk-"));
const mounted = (() => {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=24m", "tmpfs", mountPoint], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

afterAll(() => {
  if (mounted) execFileSync("umount", ["-l", mountPoint], { stdio: "ignore" });
  rmSync(mountPoint, { recursive: true, force: true });
});

/** Asks `probe` again (every 50 ms, at most `ms`) until it answers true: a store's retry runs on its own timer. */
async function until(probe: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

// These tests fill the disk under a store that is writing: no free-space floor to refuse first.
const NO_FLOOR = resolveLimits({ overrides: { disk_free_floor_bytes: 0 } });

const post = (server: DocketServer, path: string, body: unknown) =>
  fetch(server.url + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

describe("a full disk under the sqlite store", () => {
  test.skipIf(!mounted)("a full disk refuses new executions (503, Retry-After; MCP too), health and /healthz say so, and admissions resume once space returns", async () => {
    const root = join(mountPoint, "checkout");
    mkdirSync(join(root, ".git"), { recursive: true });
    const logged: string[] = [];
    const server = await startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: NO_FLOOR, capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: (line) => logged.push(line) });
    const filler = join(mountPoint, "filler");
    try {
      const accepted = (await (await post(server, "/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } })).json()) as any;
      await until(async () => ((await (await fetch(`${server.url}/api/v1/executions/get?id=${accepted.execution.id}`)).json()) as any).state === "succeeded", "the first execution");

      // Leave 256 KiB, then have an execution write far more than that.
      const { bavail, bsize } = statfsSync(mountPoint);
      writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - 256 * 1024)));
      const flood = await post(server, "/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: 100_000 } });
      expect(flood.status).toBe(200);
      const floodId = ((await flood.json()) as any).execution.id as string;
      await until(async () => (await fetch(`${server.url}/healthz`)).status === 503, "the store fault");

      const health = (await (await fetch(`${server.url}/healthz`)).json()) as any;
      expect(health).toMatchObject({ ok: false, store: { ok: false } });
      expect(typeof health.store.reason).toBe("string");
      expect(health.store.since).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(JSON.stringify(health)).not.toContain(root);

      const refused = await post(server, "/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } });
      expect(refused.status).toBe(503);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      const error = ((await refused.json()) as any).error;
      expect(error).toMatchObject({ error_code: "unavailable", stage: "admit", context: { reason: "storage_fault" } });
      expect(JSON.stringify(error)).not.toContain(root);

      const mcp = new Client({ name: "full-disk", version: "1.0.0" });
      await mcp.connect(new StreamableHTTPClientTransport(new URL("/mcp", server.url)));
      const tool = (await mcp.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } } })) as any;
      expect(tool.isError).toBe(true);
      expect(JSON.stringify(tool.content)).toContain("unavailable");
      await mcp.close();

      // health.report, called directly (admission is closed), names the fault.
      const report = (await (await post(server, "/api/v1/health/report", {})).json()) as any;
      expect(report.ok).toBe(false);
      expect(report.store.fault).toMatchObject({ since: health.store.since });
      expect(report.checks.find((c: any) => c.id === "store")).toMatchObject({ ok: false });

      rmSync(filler);
      await until(async () => (await fetch(`${server.url}/healthz`)).status === 200, "the store to write again");
      const resumed = await post(server, "/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } });
      expect(resumed.status).toBe(200);
      // Nothing accepted before the fault is lost.
      await until(async () => ((await (await fetch(`${server.url}/api/v1/executions/get?id=${floodId}`)).json()) as any).state === "succeeded", "the flood to finish");
      expect(((await (await fetch(`${server.url}/api/v1/executions/get?id=${accepted.execution.id}`)).json()) as any).state).toBe("succeeded");
    } finally {
      rmSync(filler, { force: true });
      await server.stop();
    }
  }, 90_000);

  test.skipIf(!mounted)("a disk with less free than disk_free_floor_bytes refuses new executions up front (503 disk_low, nothing taken back), health.report says so, and freed space admits them again", async () => {
    const root = join(mountPoint, "checkout-floor");
    // Within twice the floor from the start (the 24 MiB disk): free space is read on every admission.
    const FLOOR = 12 * 1024 * 1024;
    mkdirSync(join(root, ".git"), { recursive: true });
    const server = await startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: resolveLimits({ overrides: { disk_free_floor_bytes: FLOOR } }), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
    const filler = join(mountPoint, "filler");
    const start = () => post(server, "/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } });
    try {
      expect((await start()).status).toBe(200);
      // Leave 4 MiB: under the floor, with room to spare for every write already accepted.
      const { bavail, bsize } = statfsSync(mountPoint);
      writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - 4 * 1024 * 1024)));
      const answers: number[] = [];
      let refused: Response | null = null;
      await until(async () => {
        const answer = await start();
        answers.push(answer.status);
        if (answer.status === 503) refused = answer;
        else await answer.arrayBuffer();
        return answer.status === 503;
      }, "a start refused on free space");
      // Read on every admission this near the floor: the very next start is refused.
      expect(answers).toEqual([503]);
      expect(refused!.headers.get("retry-after")).toBe("10");
      const error = ((await refused!.json()) as any).error;
      expect(error.context.floor_bytes).toBe(FLOOR);
      expect(error.context.free_bytes).toBeLessThan(FLOOR);
      expect(error).toMatchObject({ error_code: "unavailable", stage: "admit", outcome_certainty: "not_applied", context: { reason: "disk_low" } });
      expect(error.context.withdrawn).toBeUndefined();
      expect(JSON.stringify(error)).not.toContain(root);
      // No write failed: the store is fine, and /healthz says so; health.report names the disk.
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const report = (await (await post(server, "/api/v1/health/report", {})).json()) as any;
      expect(report.ok).toBe(false);
      expect(report.store.storage).toMatchObject({ disk_low: true, disk_free_floor_bytes: FLOOR });
      expect(report.checks.find((c: any) => c.id === "store")).toMatchObject({ ok: false });
      expect(report.store.fault).toBeNull();
      // Every start admitted before the refusal ran to its end.
      const listed = (await (await fetch(`${server.url}/api/v1/executions/list?limit=500`)).json()) as any;
      expect(listed.items.length).toBe(answers.filter((s) => s === 200).length + 1);
      await until(async () => ((await (await fetch(`${server.url}/api/v1/executions/list?limit=500`)).json()) as any).items.every((s: any) => s.state === "succeeded"), "the admitted executions to finish");

      rmSync(filler);
      await until(async () => {
        const answer = await start();
        await answer.arrayBuffer();
        return answer.status === 200;
      }, "admissions once space is freed");
    } finally {
      rmSync(filler, { force: true });
      await server.stop();
    }
  }, 60_000);
});

const ARTIFACT = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "artifact.fill",
  title: "Write an artifact",
  description: "Writes one artifact of the size asked, and says what the write answered.",
  effect: "write",
  input: v.object({ mib: v.number() }),
  output: v.object({ ok: v.boolean(), code: v.nullable(v.string()), message: v.nullable(v.string()), context: v.unknown() }),
  async handler(input, ctx) {
    try {
      await ctx.artifacts.write("fill.bin", new Uint8Array(input.mib * 1024 * 1024));
      return { ok: true, code: null, message: null, context: null };
    } catch (error) {
      return { ok: false, code: (error as any).code ?? null, message: (error as Error).message, context: (error as any).context ?? null };
    }
  },
});
`;

describe("artifacts near the free-space floor", () => {
  test.skipIf(!mounted)("an artifact that would leave the disk under disk_free_floor_bytes is refused artifact_limit (disk_low) and not written; a smaller one is written, and the store still writes", async () => {
    useDocketModules();
    const root = join(mountPoint, "checkout-artifacts");
    const FLOOR = 8 * 1024 * 1024;
    mkdirSync(join(root, ".git"), { recursive: true });
    mkdirSync(join(root, "capabilities"));
    writeFileSync(join(root, "capabilities", "artifact.fill.ts"), ARTIFACT);
    const server = await startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: resolveLimits({ overrides: { disk_free_floor_bytes: FLOOR } }), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
    const filler = join(mountPoint, "filler");
    const run = async (mib: number) => {
      const started = (await (await post(server, "/api/v1/executions/start", { capability: "artifact.fill", input: { mib } })).json()) as any;
      let snapshot: any;
      await until(async () => (snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${started.execution.id}`)).json()) as any).state === "succeeded", "the artifact execution");
      return snapshot;
    };
    try {
      // Leave 14 MiB free: 6 MiB over the floor.
      const { bavail, bsize } = statfsSync(mountPoint);
      writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - 14 * 1024 * 1024)));
      const refused = await run(7);
      expect(refused.output).toMatchObject({ ok: false, code: "artifact_limit", context: { reason: "disk_low", name: "fill.bin", floor_bytes: FLOOR } });
      expect(refused.output.context.free_bytes - refused.output.context.bytes).toBeLessThan(FLOOR);
      expect(refused.output.message).toContain("disk_free_floor_bytes");
      expect(refused.output.message).not.toContain(root);
      expect(existsSync(join(root, ".docket", "artifacts", refused.id, "fill.bin"))).toBe(false);
      // 2 MiB leaves the floor whole: written, listed, and the store went on writing events.
      const written = await run(2);
      expect(written.output).toMatchObject({ ok: true });
      const listed = (await (await post(server, "/api/v1/executions/artifacts", { id: written.id })).json()) as any;
      expect(listed.artifacts.map((a: any) => [a.name, a.bytes])).toEqual([["fill.bin", 2 * 1024 * 1024]]);
    } finally {
      rmSync(filler, { force: true });
      await server.stop();
    }
  }, 60_000);
});

const NOTES = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "notes.measure",
  title: "Measure notes",
  description: "Answers how long its notes are: an input as large as a test needs.",
  effect: "read",
  input: v.object({ notes: v.string() }),
  output: v.object({ chars: v.number() }),
  async handler(input) {
    return { chars: input.notes.length };
  },
});
`;

describe("a start the full disk cannot write", () => {
  test.skipIf(!mounted)("is answered 503 storage_fault at once, taken back before anything ran (404, its run_id free), and starts afresh once space returns", async () => {
    useDocketModules();
    const root = join(mountPoint, "checkout-withdrawn");
    mkdirSync(join(root, ".git"), { recursive: true });
    mkdirSync(join(root, "capabilities"));
    writeFileSync(join(root, "capabilities", "notes.measure.ts"), NOTES);
    const server = await startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: NO_FLOOR, capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
    const filler = join(mountPoint, "filler");
    try {
      const warm = (await (await post(server, "/api/v1/executions/start", { capability: "notes.measure", input: { notes: "warm" }, run_id: "notes-0" })).json()) as any;
      await until(async () => ((await (await fetch(`${server.url}/api/v1/executions/get?id=${warm.execution.id}`)).json()) as any).state === "succeeded", "the first execution");
      await Bun.sleep(1200); // the store checkpoints once quiet: its log holds nothing a new write could reuse

      fillDisk(mountPoint);
      // Larger than anything the log could take in place: its creation cannot be written.
      const start = { capability: "notes.measure", input: { notes: "n".repeat(3 * 1024 * 1024) }, run_id: "notes-1" };
      const refused = await fetch(`${server.url}/api/v1/executions/start`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(start),
        signal: AbortSignal.timeout(15_000),
      });
      expect(refused.status).toBe(503);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      const error = ((await refused.json()) as any).error;
      expect(error).toMatchObject({ error_code: "unavailable", stage: "admit", retryability: "safe", outcome_certainty: "not_applied", context: { reason: "storage_fault" } });
      expect(error.message).toContain("run_id notes-1 is free again");
      expect(JSON.stringify(error)).not.toContain(root);
      const withdrawn = error.context.withdrawn as string;
      expect((await fetch(`${server.url}/api/v1/executions/get?id=${withdrawn}`)).status).toBe(404);
      // A client retrying a run_id it lost the answer of is answered at once from what is committed.
      const retried = await fetch(`${server.url}/api/v1/executions/start`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ capability: "notes.measure", input: { notes: "warm" }, run_id: "notes-0" }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(retried.status).toBe(200);
      expect(await retried.json()).toMatchObject({ deduplicated: true, execution: { id: warm.execution.id, state: "succeeded" } });

      rmSync(filler);
      await until(async () => (await fetch(`${server.url}/healthz`)).status === 200, "the store to write again");
      const again = await post(server, "/api/v1/executions/start", start);
      expect(again.status).toBe(200);
      const restarted = (await again.json()) as any;
      expect(restarted.deduplicated).toBe(false);
      expect(restarted.execution.id).not.toBe(withdrawn);
      await until(async () => ((await (await fetch(`${server.url}/api/v1/executions/get?id=${restarted.execution.id}`)).json()) as any).state === "succeeded", "the start made again");
      expect((await fetch(`${server.url}/api/v1/executions/get?id=${withdrawn}`)).status).toBe(404);
    } finally {
      rmSync(filler, { force: true });
      await server.stop();
    }
  }, 90_000);
});

describe("docket serve on a full disk", () => {
  test.skipIf(!mounted)("exits 2 saying the disk is full, without a stack or an empty .docket/.gitignore left behind, and serves once space returns", async () => {
    const root = join(mountPoint, "checkout-full-serve");
    mkdirSync(join(root, ".git"), { recursive: true });
    const filler = join(mountPoint, "filler");
    const cli = [process.execPath, ...SOURCE_FLAGS, join(import.meta.dir, "../../runtime/cli/main.ts"), "serve", "--port", "0", "--no-watch"];
    try {
      fillDisk(mountPoint);
      const refused = Bun.spawnSync(cli, { cwd: root, stdout: "pipe", stderr: "pipe", timeout: 30_000 });
      const said = refused.stderr.toString();
      expect(refused.exitCode).toBe(2);
      expect(said).toContain("Cannot serve:");
      expect(said).toContain("disk");
      expect(said).not.toContain("unexpected error");
      expect(said).not.toMatch(/\n\s+at /);
      expect(existsSync(join(root, ".docket", ".gitignore"))).toBe(false);

      rmSync(filler);
      const served = Bun.spawn(cli, { cwd: root, stdout: "pipe", stderr: "pipe" });
      try {
        const reader = served.stderr.getReader();
        let text = "";
        while (!text.includes("docket serving")) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`docket serve ended: ${text}`);
          text += new TextDecoder().decode(value);
        }
        expect(readFileSync(join(root, ".docket", ".gitignore"), "utf8")).toBe("*\n");
      } finally {
        served.kill();
        await served.exited;
      }
    } finally {
      rmSync(filler, { force: true });
    }
  }, 60_000);
});

describe("/healthz", () => {
  test("withoutPaths hides every absolute path of a store's error, and keeps its words", () => {
    expect(withoutPaths("unable to open database file /home/me/repo/.docket/state.db")).toBe("unable to open database file <path>");
    expect(withoutPaths("disk I/O error")).toBe("disk I/O error");
    expect(withoutPaths('ENOSPC: no space left on device, write "C:\\Users\\me\\repo\\x"')).toBe('ENOSPC: no space left on device, write "<path>"');
    expect(withoutPaths("x".repeat(900))).toBe(`${"x".repeat(599)}…`);
    const long = withoutPaths(`${"word ".repeat(200)}end`);
    expect(long.length).toBeLessThanOrEqual(600);
    expect(long.endsWith("word…")).toBe(true);
    // A file: URL, and a path after a colon, a bracket, a backquote or a comma.
    expect(withoutPaths("Cannot load module file:///home/me/repo/dep.ts (ENOENT)")).toBe("Cannot load module <path> (ENOENT)");
    expect(withoutPaths("EACCES:/srv/x [/srv/y] `/srv/z` a,/srv/w <C:\\Users\\me>")).toBe("EACCES:<path> [<path>] `<path>` a,<path> <<path>>");
    // Words that only look alike are kept.
    expect(withoutPaths("exit code 1; at 12:30, 3/4 done")).toBe("exit code 1; at 12:30, 3/4 done");
  });
});

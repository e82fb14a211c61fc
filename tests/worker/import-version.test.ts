import { afterEach, describe, expect, test } from "bun:test";
import { copyFile, mkdtemp, readFile, rename, rm, symlink, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HostFacts } from "../../runtime/capability/declaration.ts";
import { fileVersion } from "../../runtime/capability/capability-version.ts";
import { createWorkerPool, type WorkerPool, type WorkerTask } from "../../runtime/worker/index.ts";

const HOST = { root: "/checkout" } as unknown as HostFacts;
const echo = new URL("./fixtures/echo.ts", import.meta.url).pathname;

let pool: WorkerPool | null = null;
const dirs: string[] = [];
afterEach(async () => {
  await pool?.close();
  pool = null;
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A copy of the echo fixture in a folder of its own, and the version docket registered for it. */
async function loadedCopy(): Promise<{ dir: string; file: string; version: string }> {
  const dir = await mkdtemp(join(tmpdir(), "docket-import-version-"));
  dirs.push(dir);
  const file = join(dir, "fixture.echo.ts");
  await copyFile(echo, file);
  return { dir, file, version: fileVersion(await readFile(file, "utf8")) };
}

function task(file: string, version: string): WorkerTask {
  return {
    capability: "fixture.echo",
    source: { kind: "file", file },
    version,
    input: {},
    execution: { id: "x-20260908T010203Z-0a1b2c3d", run_id: null, session_key: null, attempt: 1 },
    root: "/checkout",
    artifacts_dir: null,
    artifact_limits: { files: 64, bytes: 1 << 20, total_bytes: 1 << 21, disk_free_floor: 0 },
  };
}

async function outcomeOf(t: WorkerTask) {
  pool = createWorkerPool({ executionWorkers: 1, directWorkers: 0, hostFacts: () => HOST });
  return pool.run(t, { lane: "execution" }).outcome;
}

describe("importVersion", () => {
  test("importVersion fails capability_changed, after_delay, for a file renamed before its task started", async () => {
    const { dir, file, version } = await loadedCopy();
    await rename(file, join(dir, "fixture.other.ts"));
    const outcome = await outcomeOf(task(file, version));
    expect(outcome).toMatchObject({ ok: false, error: { kind: "capability", code: "capability_changed", retryability: "after_delay", outcome_certainty: "not_applied" } });
    if (outcome.ok || outcome.error.kind !== "capability") throw new Error("unreachable");
    expect(outcome.error.message).toContain("no longer exists");
    expect(outcome.error.message).not.toContain("ENOENT");
  });

  test("importVersion fails capability_changed for a file that became a dangling link", async () => {
    const { dir, file, version } = await loadedCopy();
    await unlink(file);
    await symlink(join(dir, "nowhere.ts"), file);
    expect(await outcomeOf(task(file, version))).toMatchObject({ ok: false, error: { kind: "capability", code: "capability_changed", retryability: "after_delay", outcome_certainty: "not_applied" } });
  });

  test("importVersion still runs the file while it is the version registered", async () => {
    const { file, version } = await loadedCopy();
    expect(await outcomeOf(task(file, version))).toMatchObject({ ok: true });
  });
});

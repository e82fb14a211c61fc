// `docket serve` on a store file damaged where only a start-up read finds it (the table of
// run_ids, read for the marks of runs made without a server): a refusal that names the file
// and what to do, exit 2 — not "unexpected error" and a stack (durability tester, session 42).
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { chmodSync, chownSync, closeSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer } from "../../runtime/server/serve.ts";
import { useDocketModules } from "../_support/capability-fixtures.ts";
import { docket, fromSource, removeTempDirs, tempCheckout } from "./_harness.ts";

useDocketModules();
afterAll(removeTempDirs);

test("docket serve on a store damaged in its run_ids refuses, naming the file and what to do, exit 2", async () => {
  const checkout = tempCheckout();
  const server = await startServer({ cwd: checkout, port: 0, storeKind: "sqlite", limits: resolveLimits({ overrides: {} }), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
  try {
    for (let i = 0; i < 5; i++) {
      const started = await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "health.report", input: {}, run_id: `filler-${i}` }) });
      expect(started.status).toBe(200);
    }
  } finally {
    await server.stop();
  }
  // A run without a server leaves a mark, which the next server records among the run_ids.
  expect((await docket(fromSource, ["run", "health.report", "--run-id", "marked-1"], { cwd: checkout })).code).toBe(0);
  // The run_ids table's first page overwritten, as a failing disk or a stray writer would.
  const file = join(checkout, ".docket", "state.db");
  const db = new Database(file, { readonly: true });
  const { page_size: size } = db.query("PRAGMA page_size").get() as { page_size: number };
  const { rootpage } = db.query("SELECT rootpage FROM sqlite_master WHERE name = 'run_identities'").get() as { rootpage: number };
  db.close();
  const fd = openSync(file, "r+");
  writeSync(fd, Buffer.alloc(size - 200, 0xff), 0, size - 200, (rootpage - 1) * size + 100);
  closeSync(fd);
  const served = await docket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
  expect(served.code).toBe(2);
  expect(served.stderr).toStartWith(`Cannot serve: The execution store ${file} is damaged: SQLite cannot read part of it (database disk image is malformed, SQLITE_CORRUPT)`);
  expect(served.stderr).toContain(`Put back a copy of ${file} if there is one, or move it aside`);
  expect(served.stderr).not.toContain("unexpected error");
  expect(served.stderr).not.toContain("See docket serve --help");
}, 60_000);

test("docket serve on a store file SQLite cannot open refuses with what to do, and no pointer to --help, which cannot help (checking tester, session 42)", async () => {
  const checkout = tempCheckout();
  mkdirSync(join(checkout, ".docket"), { recursive: true });
  writeFileSync(join(checkout, ".docket", "state.db"), Buffer.alloc(8192, 0xa5));
  const served = await docket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
  expect(served.code).toBe(2);
  expect(served.stderr).toStartWith(`Cannot serve: Cannot open the execution store ${join(checkout, ".docket", "state.db")}:`);
  expect(served.stderr).toContain("docket never deletes or empties it");
  expect(served.stderr).not.toContain("See docket serve --help");
}, 60_000);

// Root opens any file: the refusal is seen as another user, which needs root to become.
const asNobody = process.getuid?.() === 0 && Bun.which("su") !== null;

test.skipIf(!asNobody)("docket serve on a store file another user owns names whose it is and the way out, not 'move it aside', exit 2 (checking tester, session 42)", async () => {
  const checkout = tempCheckout();
  const docketDir = join(checkout, ".docket");
  mkdirSync(docketDir, { recursive: true });
  // A state.db left by `sudo docket serve` in a .docket/ that is the user's own.
  const file = join(docketDir, "state.db");
  writeFileSync(file, "", { mode: 0o600 });
  chmodSync(checkout, 0o755);
  chownSync(docketDir, 65534, 65534);
  const served = Bun.spawnSync(["su", "nobody", "-s", "/bin/sh", "-c", `cd ${checkout} && exec ${fromSource.argv().join(" ")} serve --port 0`], { stdout: "pipe", stderr: "pipe", timeout: 50_000 });
  const stderr = served.stderr.toString();
  expect(served.exitCode).toBe(2);
  expect(stderr).toStartWith(`Cannot serve: Cannot open the execution store ${file}: EACCES`);
  expect(stderr).toContain(`${file} belongs to root (uid 0), not to this user (nobody, uid 65534): run docket as that user, or give the folder to this one (sudo chown -R 65534 ${docketDir}); nothing in the file is lost, and moving it aside would only hide its history.`);
  expect(stderr).not.toContain("Move the file aside");
  expect(stderr).not.toContain("See docket serve --help");
}, 60_000);

test("docket serve where a folder stands at the lease's name refuses, naming it and the way out, exit 2 (checking tester, session 42)", async () => {
  const checkout = tempCheckout();
  const lease = join(checkout, ".docket", "lease.json");
  mkdirSync(lease, { recursive: true });
  const served = await docket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
  expect(served.code).toBe(2);
  expect(served.stderr).toContain(`Cannot serve: cannot write the server's lease ${lease}: it is a folder, not the file docket keeps there. Remove it (rm -r ${lease}) and start again`);
  expect(served.stderr).not.toContain("unexpected error");
}, 60_000);

// Named pipes where `docket serve` keeps its own files under `.docket/`: read plainly, each held the
// server's thread in open() for good — at start before it bound, or while it served, when its
// clients, `docket executions` and SIGTERM were all left waiting (serve tester, session 50).
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { docket, fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream } from "./_harness.ts";

afterAll(removeTempDirs);

const mkfifo = (path: string) => expect(Bun.spawnSync(["mkfifo", path]).exitCode).toBe(0);

/** Starts `docket serve` in `checkout` and resolves with its URL once it printed it. */
async function serving(checkout: string) {
  const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
  const stderr = watchStream(child.stderr);
  const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
  return { child, url: banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!, stderr };
}

describe.skipIf(process.platform !== "linux")("docket serve beside named pipes in .docket/", () => {
  test("it starts and serves with a FIFO as its lease, a run's mark, reports left for it, its log and the editor types' stamp, and stops on SIGTERM", async () => {
    const checkout = tempCheckout();
    const dir = join(checkout, ".docket");
    for (const folder of ["runs", "reports", "logs", "types"]) mkdirSync(join(dir, folder), { recursive: true });
    mkfifo(join(dir, "lease.json"));
    mkfifo(join(dir, "runs", "0123456789abcdef0123456789abcdef01234567.json"));
    mkfifo(join(dir, "reports", "x-20261206T000000Z-deadbeef.json"));
    mkfifo(join(dir, "logs", "server.log"));
    mkfifo(join(dir, "types", "VERSION"));
    const { child, url } = await serving(checkout);
    try {
      expect(await (await fetch(`${url}/healthz`)).json()).toMatchObject({ ok: true });
      // The lease was written in the FIFO's place: clients find the server.
      expect(lstatSync(join(dir, "lease.json")).isFile()).toBe(true);
      const listed = await docket(fromSource, ["executions", "list", "--format", "json"], { cwd: checkout });
      expect(listed.code).toBe(0);
      const run = await docket(fromSource, ["run", "health.report", "--run-id", "fifo-check", "--format", "json"], { cwd: checkout });
      expect(run.code).toBe(0);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
    expect(existsSync(join(dir, "lease.json"))).toBe(false);
  }, 60_000);

  test("a FIFO as its store file .docket/state.db is refused at once, naming it, by serve and by a run with a run_id (checking testers, session 50: serve waited in open() for good)", async () => {
    const checkout = tempCheckout();
    mkdirSync(join(checkout, ".docket"), { recursive: true });
    mkfifo(join(checkout, ".docket", "state.db"));
    const serve = await docket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain(`Cannot open the execution store ${join(checkout, ".docket", "state.db")}: it is a named pipe (FIFO), not a file.`);
    const run = await docket(fromSource, ["run", "health.report", "--run-id", "fifo-store"], { cwd: checkout });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("state.db is a named pipe (FIFO), not docket's store file; remove it");
    // Through a link to a pipe too (second checking tester, session 50: "disk I/O error").
    rmSync(join(checkout, ".docket", "state.db"));
    mkfifo(join(checkout, "pipe"));
    symlinkSync("../pipe", join(checkout, ".docket", "state.db"));
    const linked = await docket(fromSource, ["run", "health.report", "--run-id", "fifo-store"], { cwd: checkout });
    expect(linked.stderr).toContain("state.db is a named pipe (FIFO), not docket's store file; remove it");
  }, 60_000);

  test("a FIFO put in place of its lease while it serves is replaced by the lease, and the server keeps answering and stops on SIGTERM", async () => {
    const checkout = tempCheckout();
    const lease = join(checkout, ".docket", "lease.json");
    const { child, url } = await serving(checkout);
    try {
      const written = readFileSync(lease, "utf8");
      rmSync(lease);
      mkfifo(lease);
      // The server looks at its lease every 2 s: within 20 s it is a file holding the lease again.
      for (let i = 0; i < 200 && !lstatSync(lease).isFile(); i++) await Bun.sleep(100);
      expect(lstatSync(lease).isFile()).toBe(true);
      expect(JSON.parse(readFileSync(lease, "utf8")).url).toBe(JSON.parse(written).url);
      expect((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(10_000) })).ok).toBe(true);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
  }, 60_000);
});

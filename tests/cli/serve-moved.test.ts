// A checkout moved (`mv`) while `docket serve` serves it: the server's lease watch wrote its lease
// at the old path again, which made that path anew — an empty checkout that clients were sent to —
// and a server started in the moved checkout was told only that the lock's holder "has no lease"
// (serve tester, session 50).
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { docket, fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream } from "./_harness.ts";

afterAll(removeTempDirs);

describe.skipIf(process.platform !== "linux")("docket serve of a checkout moved while it serves", () => {
  test("does not make the old path again, says the checkout is gone, and a server started in the new place names it, its pid and its old path", async () => {
    const checkout = tempCheckout();
    const moved = `${checkout}-moved`;
    const child = spawnDocket(fromSource, ["serve", "--port", "0", "--store", "memory"], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    const url = banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    try {
      // At once after the address is printed: before the lease is first looked at.
      renameSync(checkout, moved);
      // The lease is looked at every 2 s: its warning comes within a few looks.
      await stderr.until(/is gone or is another folder now \(moved, renamed or deleted\)/);
      await Bun.sleep(2500);
      expect(existsSync(checkout)).toBe(false);
      const second = await docket(fromSource, ["serve", "--port", "0", "--store", "memory"], { cwd: moved });
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`Another docket server (pid ${child.pid}) holds ${moved} (its lock): it serves this checkout at ${url} under the path it had when it started, ${checkout}`);
      expect((await fetch(`${url}/healthz`)).ok).toBe(true);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
    expect(existsSync(checkout)).toBe(false);
  }, 60_000);
});

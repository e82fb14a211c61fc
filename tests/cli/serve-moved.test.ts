// A checkout moved (`mv`) while `docket serve` serves it: the server's lease watch wrote its lease
// at the old path again, which made that path anew — an empty checkout that clients were sent to —
// and a server started in the moved checkout was told only that the lock's holder "has no lease"
// (serve tester, session 50). Served on, it then loaded and ran whatever folder came to the old
// path, and wrote into it (checking tester, session 50): it stops instead.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, renameSync, rmSync } from "node:fs";
import { docket, fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream } from "./_harness.ts";

/** The checkouts moved by a test: removeTempDirs knows them by the paths they were made at. */
const moved: string[] = [];

afterAll(() => {
  removeTempDirs();
  for (const dir of moved.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `docket serve` in `checkout`, once it printed its address. */
async function serving(checkout: string) {
  const child = spawnDocket(fromSource, ["serve", "--port", "0", "--store", "memory"], { cwd: checkout });
  const stderr = watchStream(child.stderr);
  const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
  return { child, stderr, url: banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]! };
}

describe.skipIf(process.platform !== "linux")("docket serve of a checkout moved while it serves", () => {
  test("stops, exit 1, saying why, without making the old path again; a server then starts in the new place", async () => {
    const checkout = tempCheckout();
    const movedTo = `${checkout}-moved`;
    moved.push(movedTo);
    const { child, stderr } = await serving(checkout);
    try {
      // At once after the address is printed: before the lease is first looked at.
      renameSync(checkout, movedTo);
      expect(await child.exited).toBe(1);
      expect(await stderr.done).toMatch(/is gone or is another folder now \(moved, renamed or deleted\): its lease is not written there again, and the server stops/);
    } finally {
      child.kill("SIGKILL");
    }
    expect(existsSync(checkout)).toBe(false);
    const again = await serving(movedTo);
    again.child.kill("SIGTERM");
    expect(await again.child.exited).toBe(0);
  }, 60_000);

  test("a server started in the new place while the old one still holds the checkout (frozen) is refused naming it, its address and the path it started under", async () => {
    const checkout = tempCheckout();
    const movedTo = `${checkout}-moved`;
    moved.push(movedTo);
    const { child, url } = await serving(checkout);
    try {
      // Frozen before it looks at its lease: it holds the checkout's lock, and says nothing.
      child.kill("SIGSTOP");
      renameSync(checkout, movedTo);
      const second = await docket(fromSource, ["serve", "--port", "0", "--store", "memory"], { cwd: movedTo });
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`Another docket server (pid ${child.pid}) holds ${movedTo} (its lock): it serves this checkout at ${url} under the path it had when it started, ${checkout}`);
    } finally {
      child.kill("SIGKILL");
    }
    await child.exited;
  }, 60_000);
});

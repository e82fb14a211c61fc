// serverOnceStarted (runtime/cli/server-client.ts): how long a run that needs the checkout's server
// waits for one still starting, on a clock the test moves, with the checkout's real lock.
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NO_ADDRESS, serverOnceStarted, STARTING_LOAD_MS, startingWaitMs } from "../../runtime/cli/server-client.ts";
import { lockCheckout } from "../../runtime/server/checkout-lock.ts";
import { leasePath, type Lease } from "../../runtime/server/lease.ts";
import { removeTempDirs, tempCheckout, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

/** A clock whose sleep moves it on at once, running `at` once it passes each mark. */
function movingClock(at: Array<[number, () => void]> = []) {
  let now = Date.now();
  const start = now;
  return {
    now: () => now,
    elapsed: () => now - start,
    async sleep(ms: number) {
      now += ms;
      while (at.length > 0 && now - start >= at[0]![0]) at.shift()![1]();
    },
  };
}

/** A stand-in server that answers what a live lease's check asks (`/api/v1/plane`) for `root`. */
function answering(root: string) {
  return Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ root, pid: process.pid }) });
}

const lease = (root: string, url: string, startedAt: number): Lease => ({ url, pid: process.pid, root, token: null, started_at: new Date(startedAt).toISOString(), pid_namespace: null });

describe("serverOnceStarted", () => {
  test("no server holds the checkout: null at once, nothing said", async () => {
    const root = tempCheckout();
    const said: string[] = [];
    const clock = movingClock();
    expect(await serverOnceStarted(root, (holder) => said.push(String(holder.pid)), STARTING_LOAD_MS, clock)).toBeNull();
    expect(clock.elapsed()).toBe(0);
    expect(said).toEqual([]);
  });

  test("a server loading its capability files is waited for, said once, until its lease names one that answers", async () => {
    const root = tempCheckout();
    const lock = lockCheckout(root)!;
    const server = answering(root);
    try {
      const said: Array<[number, number]> = [];
      // Its lease is written 4 s in (its files loaded), and it answers from then on.
      const clock = movingClock([[4_000, () => writeFileSync(leasePath(root), JSON.stringify(lease(root, server.url.origin, Date.now())))]]);
      const found = await serverOnceStarted(root, (holder, waitMs) => said.push([holder.pid, waitMs]), STARTING_LOAD_MS, clock);
      expect(found !== null && "server" in found ? found.server.url : null).toBe(server.url.origin);
      expect(clock.elapsed()).toBe(4_000);
      expect(said).toEqual([[process.pid, STARTING_LOAD_MS]]);
    } finally {
      void server.stop(true);
      lock.release();
    }
  });

  test("one that never writes its lease is given STARTING_LOAD_MS, then named as still loading", async () => {
    const root = tempCheckout();
    const lock = lockCheckout(root)!;
    try {
      const clock = movingClock();
      const found = await serverOnceStarted(root, () => undefined, STARTING_LOAD_MS, clock);
      expect(found).toMatchObject({ holder: { url: NO_ADDRESS, pid: process.pid }, loading: true, waitedMs: STARTING_LOAD_MS });
      expect(clock.elapsed()).toBe(STARTING_LOAD_MS);
    } finally {
      lock.release();
    }
  });

  test("one whose .docket/ was removed (its serve.lock gone) is not waited for: it writes no lease again", async () => {
    const root = tempCheckout();
    const lock = lockCheckout(root)!;
    try {
      rmSync(join(root, ".docket"), { recursive: true, force: true });
      const said: number[] = [];
      const clock = movingClock();
      const found = await serverOnceStarted(root, (holder) => said.push(holder.pid), STARTING_LOAD_MS, clock);
      expect(found).toMatchObject({ holder: { url: NO_ADDRESS }, loading: false });
      expect(clock.elapsed()).toBe(0);
      expect(said).toEqual([]);
    } finally {
      lock.release();
    }
  });

  test("a leased server that does not answer is waited for only while its lease is young, never for an old one", async () => {
    const root = tempCheckout();
    const lock = lockCheckout(root)!;
    try {
      // Nothing listens at this address: port 9 on loopback refuses at once.
      writeFileSync(leasePath(root), JSON.stringify(lease(root, "http://127.0.0.1:9", Date.now() - 60_000)));
      const old = movingClock();
      expect(await serverOnceStarted(root, () => undefined, STARTING_LOAD_MS, old)).toMatchObject({ holder: { url: "http://127.0.0.1:9" }, loading: false });
      expect(old.elapsed()).toBe(0);
      const young = movingClock();
      writeFileSync(leasePath(root), JSON.stringify(lease(root, "http://127.0.0.1:9", young.now() - 1_000)));
      expect(await serverOnceStarted(root, () => undefined, STARTING_LOAD_MS, young)).toMatchObject({ holder: { url: "http://127.0.0.1:9" }, loading: false });
      expect(young.elapsed()).toBeGreaterThanOrEqual(4_000);
      expect(young.elapsed()).toBeLessThanOrEqual(4_100);
    } finally {
      lock.release();
    }
  });
});

describe("startingWaitMs", () => {
  test("a server loading its files is waited for as long as each file may take, twice (its trial, then its import), within 15 s and 2 min", async () => {
    const root = tempCheckout();
    expect(await startingWaitMs(root, [], 5_000)).toBe(STARTING_LOAD_MS);
    // Three files of capabilities/ and one of another folder; a helper and a test are no capability files.
    writeFiles(root, { "capabilities/a.one.ts": "", "capabilities/a.two.ts": "", "capabilities/a.three.ts": "", "capabilities/_helper.ts": "", "capabilities/a.one.test.ts": "", "more/b.one.ts": "" });
    expect(await startingWaitMs(root, [], 5_000)).toBe(30_000);
    expect(await startingWaitMs(root, [join(root, "more"), join(root, "missing")], 5_000)).toBe(40_000);
    expect(await startingWaitMs(root, [], 60_000)).toBe(120_000);
  });
});

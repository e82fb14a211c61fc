// `docket serve` from source: it starts, answers, refuses a second server on the checkout, stops on Ctrl-C.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { docket, fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream } from "./_harness.ts";

afterAll(removeTempDirs);

describe("docket serve", () => {
  test("serves the checkout, refuses a second server with exit 2, and stops cleanly on Ctrl-C", async () => {
    const checkout = tempCheckout();
    const child = spawnDocket(fromSource, ["serve", "--port", "0", "--max-concurrent", "1"], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    const url = banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    try {
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true });
      expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(true);

      const second = await docket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`Cannot serve: Another docket server (pid ${child.pid}) already serves ${checkout} at ${url}`);
    } finally {
      child.kill("SIGINT");
    }
    expect(await child.exited).toBe(0);
    expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(false);
  });

  // Linux only: elsewhere docket cannot tell whether it was started under nohup, and leaves hang-ups alone (stop-signals.ts).
  test.skipIf(process.platform !== "linux")(
    "stops cleanly on a hang-up (its terminal or SSH session went away): the lease is removed",
    async () => {
      const checkout = tempCheckout();
      const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
      const stderr = watchStream(child.stderr);
      const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
      // Answering: past start-up, where the signals are taken.
      expect(await (await fetch(`${banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]}/healthz`)).json()).toEqual({ ok: true });
      child.kill("SIGHUP");
      expect(await child.exited).toBe(0);
      expect(await stderr.done).toContain("docket: SIGHUP, stopping");
      expect(existsSync(join(checkout, ".docket", "lease.json"))).toBe(false);
    },
  );

  test("a limit flag out of range exits 2 naming the flag and its range", async () => {
    const result = await docket(fromSource, ["serve", "--port", "0", "--heartbeat-ms", "1"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--heartbeat-ms (quiet time before a heartbeat) must be a whole number from 10 to 3600000, got "1".');
  });

  test("a bad --port exits 2", async () => {
    const result = await docket(fromSource, ["serve", "--port", "http"], { cwd: tempCheckout() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--port must be a whole number from 0 to 65535, got "http".');
  });
});

// The npm launcher waits beside docket on Node below 22.15: killed with SIGKILL, it passes no signal
// on, and docket must not be left serving its port (distribution tester, session 44).
import { afterAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { isProcessAlive } from "../../runtime/server/lease.ts";
import { cleanEnv, fromSource, removeTempDirs, tempCheckout } from "./_harness.ts";

afterAll(() => removeTempDirs());

test("docket stops as on SIGTERM once the launcher that spawned it is gone: its lease is removed, nothing left serving", async () => {
  const repo = tempCheckout();
  // A stand-in launcher: a shell that names itself as the launcher, starts docket and waits, as the launcher does.
  const launcher = Bun.spawn(["sh", "-c", 'DOCKET_LAUNCHER_PID=$$ "$@" & echo $!; wait', "sh", ...fromSource.argv(), "serve", "--port", "0"], { cwd: repo, env: cleanEnv(), stdout: "pipe", stderr: "ignore" });
  const reader = launcher.stdout.getReader();
  let said = "";
  while (!said.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    said += new TextDecoder().decode(value);
  }
  const docketPid = Number(said.trim());
  try {
    const lease = join(repo, ".docket", "lease.json");
    for (let i = 0; i < 300 && !existsSync(lease); i++) await Bun.sleep(50);
    expect(existsSync(lease)).toBe(true);
    launcher.kill("SIGKILL");
    await launcher.exited;
    for (let i = 0; i < 200 && isProcessAlive(docketPid); i++) await Bun.sleep(50);
    expect(isProcessAlive(docketPid)).toBe(false);
    // Stopped as on SIGTERM: its lease went with it.
    expect(existsSync(lease)).toBe(false);
  } finally {
    if (isProcessAlive(docketPid)) process.kill(docketPid, "SIGKILL");
  }
}, 30_000);

test("docket stops too when its launcher was killed before docket began to look (its first ~100 ms; checking tester, session 44)", async () => {
  const repo = tempCheckout();
  const launcher = Bun.spawn(["sh", "-c", 'DOCKET_LAUNCHER_PID=$$ "$@" & echo $!; kill -9 $$', "sh", ...fromSource.argv(), "serve", "--port", "0"], { cwd: repo, env: cleanEnv(), stdout: "pipe", stderr: "ignore" });
  const docketPid = Number((await new Response(launcher.stdout).text()).trim());
  try {
    for (let i = 0; i < 300 && isProcessAlive(docketPid); i++) await Bun.sleep(50);
    expect(isProcessAlive(docketPid)).toBe(false);
    expect(existsSync(join(repo, ".docket", "lease.json"))).toBe(false);
  } finally {
    if (isProcessAlive(docketPid)) process.kill(docketPid, "SIGKILL");
  }
}, 30_000);

test("a DOCKET_LAUNCHER_PID that is not docket's parent is ignored: the run goes on to its end", async () => {
  const repo = tempCheckout();
  const child = Bun.spawn([...fromSource.argv(), "run", "health.report"], { cwd: repo, env: cleanEnv({ DOCKET_LAUNCHER_PID: "1" }), stdout: "pipe", stderr: "pipe" });
  expect(await child.exited).toBe(0);
});

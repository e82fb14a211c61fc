// ctx.exec children outlive no killed docket (docs/containment.md, "No child outlives its
// execution"): a server or a `docket run` killed with SIGKILL runs no code, so the next docket of
// the checkout ends the process groups it recorded in .docket/children/ — never those of a docket
// that still runs.
import { afterAll, describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processStarted } from "../../runtime/server/lease.ts";
import { endLeftChildren } from "../../runtime/worker/child-ledger.ts";
import { docket, fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles } from "./_harness.ts";

afterAll(() => removeTempDirs());

/** Runs `sleep <seconds>` under a shell through ctx.exec, and records that it started. */
const KIDS = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.kids", title: "Kids", description: "Runs a long child.", effect: "read",
  input: v.object({ seconds: v.number() }), output: v.object({}),
  async handler(input, ctx) {
    await ctx.exec(["sh", "-c", "sleep " + input.seconds + "; true"]);
    return {};
  },
});
`;
/** Runs a child that ignores TERM (and its shell too), as a careless tool or a stuck one would. */
const DEAF = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.deaf", title: "Deaf", description: "Runs a child that ignores TERM.", effect: "read",
  input: v.object({ seconds: v.number() }), output: v.object({}),
  async handler(input, ctx) {
    await ctx.exec(["sh", "-c", "trap '' TERM; sleep " + input.seconds + "; true"]);
    return {};
  },
});
`;
const QUICK = `import { capability } from "docket";
import * as v from "valibot";
export default capability({ id: "team.quick", title: "Quick", description: "Returns.", effect: "read", input: v.object({}), output: v.object({ ok: v.boolean() }), handler: () => ({ ok: true }) });
`;

/** The pids of `sleep <seconds>` processes (a distinct number per test: no other test's). */
function sleepers(seconds: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (cmdline[0] === "sleep" && cmdline[1] === String(seconds)) found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** The child groups recorded in the checkout's ledger: one is written a moment after its child started. */
function recorded(checkout: string): string[] {
  try {
    return readdirSync(join(checkout, ".docket", "children"));
  } catch {
    return [];
  }
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

describe.skipIf(process.platform !== "linux")("ctx.exec children of a killed docket", () => {
  test("a server killed with SIGKILL leaves its ctx.exec child to the next docket of the checkout, which ends it; one that still runs keeps its own", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/team.kids.ts": KIDS, "capabilities/team.quick.ts": QUICK });
    const server = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: checkout });
    try {
      const url = (await watchStream(server.stderr).until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
      const start = (seconds: number) => fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ capability: "team.kids", input: { seconds } }) });
      expect((await start(3101)).status).toBe(200);
      await until("the server's child, recorded", () => sleepers(3101).length === 1 && recorded(checkout).length === 1);
      // A docket run beside the live server leaves the server's child alone.
      expect((await docket(fromSource, ["run", "team.quick"], { cwd: checkout })).code).toBe(0);
      expect(sleepers(3101)).toHaveLength(1);
      server.kill("SIGKILL");
      await server.exited;
      expect(sleepers(3101)).toHaveLength(1);
      // The next docket of the checkout ends it, and says so.
      const next = await docket(fromSource, ["run", "team.quick"], { cwd: checkout });
      expect(next.code).toBe(0);
      expect(next.stderr).toMatch(/docket is ending 1 process group\(s\) of ctx\.exec children \(\d+\) that a docket process of this checkout, killed since, left running: TERM now, KILL after grace_ms \(5000 ms\) to what ignores it/);
      await until("the child ended", () => sleepers(3101).length === 0);
      expect(recorded(checkout)).toEqual([]);
    } finally {
      server.kill("SIGKILL");
      for (const pid of sleepers(3101)) process.kill(pid, "SIGKILL");
    }
  }, 30_000);

  test("a child ignoring TERM, left by a killed docket, meets its KILL from a later docket run once the grace has passed, though each run exits before it (authoring tester, session 43)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/team.deaf.ts": DEAF, "capabilities/team.quick.ts": QUICK });
    const run = spawnDocket(fromSource, ["run", "team.deaf", "--input", '{"seconds":3103}'], { cwd: checkout });
    try {
      await until("the run's child, recorded", () => sleepers(3103).length === 1 && recorded(checkout).length === 1);
      run.kill("SIGKILL");
      await run.exited;
      // A quick run sends TERM, which the child ignores, and exits long before its grace is over.
      const first = await docket(fromSource, ["run", "team.quick"], { cwd: checkout, env: { DOCKET_GRACE_MS: "1500" } });
      expect(first.code).toBe(0);
      expect(first.stderr).toContain("TERM now, KILL after grace_ms (1500 ms) to what ignores it — by the next docket of the checkout if this one has exited by then.");
      await Bun.sleep(300);
      expect(sleepers(3103)).toHaveLength(1);
      // Its record stays, with when the TERM was sent.
      const [name] = recorded(checkout);
      expect(name).toBeDefined();
      const record = JSON.parse(readFileSync(join(checkout, ".docket", "children", name!), "utf8"));
      expect(Date.parse(record.termed_at)).toBeGreaterThan(Date.now() - 10_000);
      // Once the grace has passed, the next run kills it at once, and says why.
      await Bun.sleep(1500);
      const second = await docket(fromSource, ["run", "team.quick"], { cwd: checkout, env: { DOCKET_GRACE_MS: "1500" } });
      expect(second.code).toBe(0);
      expect(second.stderr).toMatch(/docket killed 1 process group\(s\) of ctx\.exec children \(\d+\) left running by a killed docket process of this checkout, which ignored the TERM an earlier docket sent them for longer than grace_ms \(1500 ms\)\./);
      await until("the child killed", () => sleepers(3103).length === 0);
      expect(recorded(checkout)).toEqual([]);
    } finally {
      run.kill("SIGKILL");
      for (const pid of sleepers(3103)) process.kill(pid, "SIGKILL");
    }
  }, 30_000);

  test("a folder, a pipe or a link to a device among the records is left alone: docket run starts, neither stopping on it nor reading it (checking tester, session 43)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/team.quick.ts": QUICK });
    const children = join(checkout, ".docket", "children");
    mkdirSync(join(children, "d.json"), { recursive: true });
    expect(spawnSync("mkfifo", [join(children, "f.json")]).status).toBe(0);
    symlinkSync("/dev/zero", join(children, "z.json"));
    writeFileSync(join(children, "garbage.json"), "{not json");
    // Old enough not to be a record another docket is writing this instant.
    utimesSync(join(children, "garbage.json"), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    writeFileSync(join(children, "writing.json"), "{\"pgid\":");
    const ran = await docket(fromSource, ["run", "team.quick"], { cwd: checkout });
    expect(ran.stderr).not.toContain("EISDIR");
    expect(ran.code).toBe(0);
    // The strays stay as they were, and so does a record written a moment ago (another docket may
    // be writing it); the old garbage record, docket's own kind of file, is let go.
    expect(recorded(checkout).sort()).toEqual(["d.json", "f.json", "writing.json", "z.json"]);
  }, 30_000);

  // Root reads any file: a record this user may not read is seen as another user, which needs root to become.
  test.skipIf(process.getuid?.() !== 0 || Bun.which("su") === null)("a record this user may not read (another user's) is left for a docket that can read it, not deleted (checking tester, session 43)", () => {
    const checkout = tempCheckout();
    const children = join(checkout, ".docket", "children");
    mkdirSync(children, { recursive: true });
    const record = join(children, "2000000000-2000000001.json");
    writeFileSync(record, JSON.stringify({ pgid: 2000000001, started: "1", owner_pid: 2000000000, owner_started: "0" }), { mode: 0o600 });
    chmodSync(checkout, 0o755);
    chownSync(join(checkout, ".docket"), 65534, 65534);
    chownSync(children, 65534, 65534);
    const ledger = new URL("../../runtime/worker/child-ledger.ts", import.meta.url).pathname;
    const script = join(checkout, "sweep.ts");
    writeFileSync(script, `import { endLeftChildren } from ${JSON.stringify(ledger)};\nconsole.log(JSON.stringify(endLeftChildren(${JSON.stringify(checkout)}, 100)));\n`, { mode: 0o644 });
    const swept = spawnSync("su", ["nobody", "-s", "/bin/sh", "-c", `${process.execPath} ${script}`], { encoding: "utf8" });
    expect(swept.stdout.trim()).toBe('{"ending":[],"killed":[]}');
    expect(readdirSync(children)).toEqual(["2000000000-2000000001.json"]);
  });

  test("a TERM dated in the future (a clock stepped back) counts from now: the KILL comes after grace_ms, not an hour later (checking tester, session 43)", async () => {
    const checkout = tempCheckout();
    const deaf = spawn("setsid", ["sh", "-c", "trap '' TERM; exec sleep 3105"], { detached: true, stdio: "ignore" });
    try {
      await until("the deaf sleeper", () => sleepers(3105).length === 1);
      const pid = sleepers(3105)[0]!;
      const pgid = Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[2]);
      mkdirSync(join(checkout, ".docket", "children"), { recursive: true });
      const record = { pgid, started: processStarted(pgid), owner_pid: 2_000_000_000, owner_started: "0", termed_at: new Date(Date.now() + 3_600_000).toISOString() };
      writeFileSync(join(checkout, ".docket", "children", `2000000000-${pgid}.json`), JSON.stringify(record));
      expect(endLeftChildren(checkout, 300).ending).toEqual([pgid]);
      await until("the KILL after the grace", () => sleepers(3105).length === 0, 5_000);
    } finally {
      for (const pid of sleepers(3105)) process.kill(pid, "SIGKILL");
      deaf.kill("SIGKILL");
    }
  }, 30_000);

  test("a docket run killed with SIGKILL leaves its ctx.exec child to the next docket run, which ends it", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/team.kids.ts": KIDS, "capabilities/team.quick.ts": QUICK });
    const run = spawnDocket(fromSource, ["run", "team.kids", "--input", '{"seconds":3102}'], { cwd: checkout });
    try {
      await until("the run's child, recorded", () => sleepers(3102).length === 1 && recorded(checkout).length === 1);
      run.kill("SIGKILL");
      await run.exited;
      expect(sleepers(3102)).toHaveLength(1);
      expect((await docket(fromSource, ["run", "team.quick"], { cwd: checkout })).code).toBe(0);
      await until("the child ended", () => sleepers(3102).length === 0);
    } finally {
      run.kill("SIGKILL");
      for (const pid of sleepers(3102)) process.kill(pid, "SIGKILL");
    }
  }, 30_000);
});

import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { fillDisk, smallDisk } from "../store/_sqlite-durability.ts";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { spawnSync } from "node:child_process";
import { acquireLease, isLeaseLive, isProcessAlive, leasePath, ownPidNamespace, readLease, releaseLease, restoreLease, type Lease } from "../../runtime/server/lease.ts";
import { findServer } from "../../runtime/cli/server-client.ts";
import { isLoopback, serverToken, ServerAlreadyRunningError, startServer } from "../../runtime/server/serve.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { tempCheckout } from "./_support/servers.ts";
import { lockCheckout } from "../../runtime/server/checkout-lock.ts";

/** The pid of a process that has already exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", "0"]).pid!;
}

const leaseIn = (root: string, overrides: Partial<Lease> = {}): Lease => ({ url: "http://127.0.0.1:1", pid: process.pid, root, token: null, started_at: new Date().toISOString(), pid_namespace: ownPidNamespace(), ...overrides });

const serve = (cwd: string, lines: string[] = []) =>
  startServer({ cwd, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: (line) => lines.push(line) });

describe("lease", () => {
  test("a process killed and not reaped (a zombie) is not alive: its port is anyone's, so no token goes there", async () => {
    // sh starts `sleep 0.1`, says its pid, then becomes `sleep 30`, which never reaps it.
    const parent = Bun.spawn(["sh", "-c", "sleep 0.1 & echo $!; exec sleep 30"], { stdout: "pipe" });
    try {
      const reader = parent.stdout.getReader();
      let said = "";
      while (!said.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) break;
        said += new TextDecoder().decode(value);
      }
      const pid = Number(said.trim());
      expect(Number.isInteger(pid)).toBe(true);
      let state = "";
      for (let i = 0; i < 100 && state !== "Z"; i++) {
        await Bun.sleep(20);
        state = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]![0]!;
      }
      expect(state).toBe("Z");
      expect(isProcessAlive(pid)).toBe(false);
      expect(isProcessAlive(parent.pid)).toBe(true);
    } finally {
      parent.kill("SIGKILL");
    }
  });

  test("acquireLease on a full disk says which file and what to do, keeps the error's code, and leaves no temporary file behind (durability tester, session 40)", async () => {
    const disk = smallDisk("1m");
    if (disk === null) return console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
    try {
      const root = join(disk.dir, "checkout");
      mkdirSync(join(root, ".docket"), { recursive: true });
      fillDisk(disk.dir);
      for (let attempt = 0; attempt < 2; attempt++) {
        const refused = await acquireLease(leaseIn(root)).then(
          () => null,
          (error: NodeJS.ErrnoException) => error,
        );
        expect(refused?.code).toBe("ENOSPC");
        expect(refused?.message).toBe(`cannot write the server's lease ${leasePath(root)}: the disk (or the folder's quota) is full (ENOSPC). Free some space on the disk holding ${join(root, ".docket")} and start again.`);
      }
      expect(readdirSync(join(root, ".docket")).filter((name) => name.startsWith("lease.json"))).toEqual([]);
    } finally {
      disk.unmount();
    }
  });

  test("acquireLease writes .docket/lease.json with mode 0600 and a .gitignore holding *", async () => {
    const root = tempCheckout();
    const lease = leaseIn(root);
    expect(await acquireLease(lease)).toEqual({ ok: true });
    expect(statSync(leasePath(root)).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(root, ".docket", ".gitignore"), "utf8")).toBe("*\n");
    expect(readLease(root)).toEqual(lease);
    rmSync(root, { recursive: true, force: true });
  });

  test("readLease ignores a file that is not a lease", () => {
    const root = tempCheckout();
    mkdirSync(join(root, ".docket"));
    writeFileSync(leasePath(root), "{ torn");
    expect(readLease(root)).toBeNull();
    writeFileSync(leasePath(root), JSON.stringify({ url: 1 }));
    expect(readLease(root)).toBeNull();
    rmSync(root, { recursive: true, force: true });
  });

  test("a stale lease (dead pid, or a live pid whose URL does not answer for this root) is replaced", async () => {
    const root = tempCheckout();
    await acquireLease(leaseIn(root, { pid: deadPid() }));
    expect(await isLeaseLive(readLease(root)!)).toBe(false);
    const mine = leaseIn(root, { url: "http://127.0.0.1:9" });
    expect(await acquireLease(mine)).toEqual({ ok: true });
    expect(readLease(root)).toEqual(mine);
    expect(await isLeaseLive(mine)).toBe(false);
    expect(await acquireLease(leaseIn(root, { started_at: "later" }))).toEqual({ ok: true });
    rmSync(root, { recursive: true, force: true });
  });

  test("readLease reads the server's pid namespace; isLeaseLive judges a lease of another pid namespace by its answer alone, never by a pid this process cannot see", async () => {
    const root = tempCheckout();
    const server = await serve(root);
    // A server elsewhere answers for the root with its own pid, which names nobody here.
    const elsewhere = deadPid();
    const other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ root, pid: elsewhere, version: "x" }) });
    try {
      expect(readLease(root)).toMatchObject({ pid: process.pid, pid_namespace: ownPidNamespace() });
      const url = `http://127.0.0.1:${other.port}`;
      // Before the fix the pid was looked up here, and a serving server in another namespace taken for a dead one.
      expect(await isLeaseLive(leaseIn(root, { url, pid: elsewhere, pid_namespace: "pid:[1]" }))).toBe(true);
      // In this namespace the pid is looked up, and a dead one is no server whatever answers.
      expect(await isLeaseLive(leaseIn(root, { url, pid: elsewhere }))).toBe(false);
      // Nor is a server that answers with another pid, wherever the lease says it lives.
      expect(await isLeaseLive(leaseIn(root, { url, pid: elsewhere + 1, pid_namespace: "pid:[1]" }))).toBe(false);
    } finally {
      other.stop(true);
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a lease left by a server killed on the port the new one binds is replaced: the new server answering there is not its holder", async () => {
    const root = tempCheckout();
    const lines: string[] = [];
    // A first server, to learn a port that is free; then a lease naming that port and a live
    // process that is no server (a killed server not reaped yet by its parent looks alive too).
    const first = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: () => {} });
    const port = Number(new URL(first.url).port);
    await first.stop();
    const sleeper = Bun.spawn(["sleep", "30"]);
    try {
      writeFileSync(leasePath(root), JSON.stringify(leaseIn(root, { url: `http://127.0.0.1:${port}`, pid: sleeper.pid })));
      const second = await startServer({ cwd: root, port, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: (line) => lines.push(line) });
      expect(readLease(root)).toMatchObject({ pid: process.pid, url: second.url });
      expect(await isLeaseLive(leaseIn(root, { url: second.url, pid: sleeper.pid }))).toBe(false);
      expect(await isLeaseLive(readLease(root)!)).toBe(true);
      await second.stop();
    } finally {
      sleeper.kill();
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a checkout copied with its .docket/ while its server runs can be served: the copied lease names the original's server, not the copy's", async () => {
    const original = tempCheckout();
    const copy = tempCheckout();
    const first = await serve(original);
    try {
      mkdirSync(join(copy, ".docket"), { recursive: true });
      writeFileSync(leasePath(copy), readFileSync(leasePath(original)));
      expect(readLease(copy)).toBeNull();
      const lines: string[] = [];
      const second = await serve(copy, lines);
      try {
        expect(readLease(copy)).toMatchObject({ root: copy, url: second.url });
        expect(readLease(original)).toMatchObject({ root: original, url: first.url });
        expect(lines.join("\n")).toContain(`docket serving ${copy}`);
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
      rmSync(original, { recursive: true, force: true });
      rmSync(copy, { recursive: true, force: true });
    }
  });

  test("releaseLease removes only a lease that is still this one", async () => {
    const root = tempCheckout();
    const first = leaseIn(root, { started_at: "first" });
    await acquireLease(first);
    const second = leaseIn(root, { started_at: "second" });
    await acquireLease(second);
    expect(releaseLease(first)).toBe(false);
    expect(existsSync(leasePath(root))).toBe(true);
    expect(releaseLease(second)).toBe(true);
    expect(existsSync(leasePath(root))).toBe(false);
    rmSync(root, { recursive: true, force: true });
  });

  test("startServer refuses a second server on a checkout a live one serves, naming its pid and url; stop removes the lease", async () => {
    const root = tempCheckout();
    const lines: string[] = [];
    const first = await serve(root, lines);
    try {
      expect(lines).toEqual([`docket serving ${root} at ${first.url}`]);
      const lease = readLease(root)!;
      expect(lease).toMatchObject({ url: first.url, pid: process.pid, root, token: null });
      expect(await isLeaseLive(lease)).toBe(true);
      const refused = await serve(join(root)).then(
        () => null,
        (error) => error,
      );
      expect(refused).toBeInstanceOf(ServerAlreadyRunningError);
      expect(refused.exitCode).toBe(2);
      expect(refused.message).toContain(String(process.pid));
      expect(refused.message).toContain(first.url);
    } finally {
      await first.stop();
    }
    expect(existsSync(leasePath(root))).toBe(false);
    const again = await serve(root);
    await again.stop();
    rmSync(root, { recursive: true, force: true });
  });

  test("a second server refused while the lock's holder has not written its lease does not name the dead server whose lease was left behind (tester)", async () => {
    const root = tempCheckout();
    // A server killed earlier left its lease; another, starting, holds the lock and has written none yet.
    mkdirSync(join(root, ".docket"), { recursive: true });
    const dead = deadPid();
    writeFileSync(leasePath(root), JSON.stringify(leaseIn(root, { pid: dead, url: "http://127.0.0.1:4711" })));
    const starting = lockCheckout(root)!;
    try {
      const refused = await serve(root).then(
        () => null,
        (error) => error,
      );
      expect(refused).toBeInstanceOf(ServerAlreadyRunningError);
      expect(refused.message).toContain("has no lease: it is starting");
      expect(refused.message).not.toContain(String(dead));
      expect(refused.message).not.toContain("4711");
    } finally {
      starting.release();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("a checkout folder gone (moved or deleted)", () => {
  test("is never made again by writing the lease back, whenever that happens: restoreLease refuses naming it (checking tester, session 50: the old path came back after a move)", async () => {
    const root = tempCheckout();
    const lease: Lease = { url: "http://127.0.0.1:1", pid: process.pid, root, token: null, started_at: new Date().toISOString(), pid_namespace: ownPidNamespace() };
    const moved = `${root}-moved`;
    rmSync(moved, { recursive: true, force: true });
    const { renameSync } = await import("node:fs");
    renameSync(root, moved);
    try {
      expect(() => restoreLease(lease)).toThrow(`the checkout's folder ${root} does not exist (moved or deleted?), and docket does not make it again.`);
      expect(existsSync(root)).toBe(false);
    } finally {
      rmSync(moved, { recursive: true, force: true });
    }
  });
});

describe("a lease removed under a running server", () => {
  test("is written again when .docket/ is deleted (git clean -fdX), so runs find the server; the log says so once, and that the store file went with it; its log file is made again (MCP/CLI tester, session 44)", async () => {
    const root = tempCheckout();
    const lines: string[] = [];
    const server = await startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: (line) => lines.push(line), leaseLookMs: 20 });
    try {
      const before = readLease(root)!;
      rmSync(join(root, ".docket"), { recursive: true, force: true });
      let lease: Lease | null = null;
      for (let i = 0; i < 250 && lease === null; i++) {
        await Bun.sleep(20);
        lease = readLease(root);
      }
      expect(lease).toEqual(before);
      expect(statSync(leasePath(root)).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(root, ".docket", ".gitignore"), "utf8")).toBe("*\n");
      expect((await findServer(root))?.url).toBe(server.url);
      const warnings = lines.filter((line) => line.includes("lease (.docket/lease.json) was gone"));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(".docket/ removed under it");
      expect(warnings[0]).toContain(".docket/state.db went with it");
      // The warning itself went to a log file made again, not to the deleted one.
      expect(readFileSync(join(root, ".docket", "logs", "server.log"), "utf8")).toContain("lease (.docket/lease.json) was gone");
      // Looked at again and in place: nothing more is said.
      await Bun.sleep(100);
      expect(lines.filter((line) => line.includes("was gone or not its own"))).toHaveLength(1);
    } finally {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("is never written over another live server's, and not again by a server that is stopping", async () => {
    const root = tempCheckout();
    const lease = leaseIn(root, { url: "http://127.0.0.1:2" });
    const other = Bun.spawn(["sleep", "30"]);
    try {
      mkdirSync(join(root, ".docket"), { recursive: true });
      writeFileSync(leasePath(root), JSON.stringify(leaseIn(root, { pid: other.pid, url: "http://127.0.0.1:3" })));
      expect(restoreLease(lease)).toBe("other");
      expect(readLease(root)!.pid).toBe(other.pid);
      // Its holder gone, the lease is this one's again.
      other.kill("SIGKILL");
      await other.exited;
      expect(restoreLease(lease)).toBe("restored");
      expect(restoreLease(lease)).toBe("kept");
    } finally {
      other.kill("SIGKILL");
    }
    const lines: string[] = [];
    const server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: (line) => lines.push(line), leaseLookMs: 5 });
    await server.stop();
    await Bun.sleep(50);
    expect(existsSync(leasePath(root))).toBe(false);
    expect(lines.filter((line) => line.includes("was gone or not its own"))).toEqual([]);
    rmSync(root, { recursive: true, force: true });
  });
});

describe("serve options", () => {
  test("a non-loopback host gets a generated token; loopback needs none; a given token is checked", () => {
    expect(serverToken("127.0.0.1", null)).toEqual({ token: null, generated: false });
    expect(serverToken("localhost", null)).toEqual({ token: null, generated: false });
    expect(serverToken("::1", null)).toEqual({ token: null, generated: false });
    const generated = serverToken("0.0.0.0", null);
    expect(generated.generated).toBe(true);
    expect(generated.token!.length).toBeGreaterThanOrEqual(32);
    expect(serverToken("0.0.0.0", null).token).not.toBe(generated.token);
    expect(serverToken("192.168.1.5", "a-given-token-of-length")).toEqual({ token: "a-given-token-of-length", generated: false });
    expect(() => serverToken("127.0.0.1", "short")).toThrow(RangeError);
    expect(isLoopback("127.8.9.10")).toBe(true);
    expect(isLoopback("10.0.0.1")).toBe(false);
  });
});

describe("a checkout this user cannot write to", () => {
  // Root writes anywhere: the refusal is seen as another user, which needs root to become.
  const asNobody = process.getuid?.() === 0 && Bun.which("su") !== null;
  test.skipIf(!asNobody)("ensureDocketDir names the folder it cannot create, why, and the ways out, not only the runtime's EACCES (hostile tester, session 38)", () => {
    const root = mkdtempSync(join(tmpdir(), "docket-read-only-"));
    try {
      chmodSync(root, 0o555);
      const lease = new URL("../../runtime/server/lease.ts", import.meta.url).pathname;
      const script = `import { ensureDocketDir } from ${JSON.stringify(lease)};\ntry { ensureDocketDir(${JSON.stringify(root)}); console.log("made"); } catch (error) { console.log(error.name + ": " + error.message); }\n`;
      writeFileSync(join(tmpdir(), `${basename(root)}.ts`), script, { mode: 0o644 });
      const ran = spawnSync("su", ["nobody", "-s", "/bin/sh", "-c", `${process.execPath} ${join(tmpdir(), `${basename(root)}.ts`)}`], { encoding: "utf8" });
      expect(ran.stdout.trim()).toBe(`DocketDirError: cannot create ${root}/.docket (EACCES): this user cannot write to the checkout, and docket keeps its lock, its address, its logs and its store there. Run docket as a user who can write to ${root}, or make it writable (docket run of a capability needs no .docket/ unless it has a --run-id).`);
      // A .docket/ made by root before (a server run once as root): the lock names its owner and the ways out (checking tester).
      chmodSync(root, 0o755);
      mkdirSync(join(root, ".docket"), { mode: 0o700 });
      const checkoutLock = new URL("../../runtime/server/checkout-lock.ts", import.meta.url).pathname;
      writeFileSync(join(tmpdir(), `${basename(root)}.ts`), `import { lockCheckout } from ${JSON.stringify(checkoutLock)};\ntry { lockCheckout(${JSON.stringify(root)}); console.log("locked"); } catch (error) { console.log(error.message); }\n`, { mode: 0o644 });
      const locked = spawnSync("su", ["nobody", "-s", "/bin/sh", "-c", `${process.execPath} ${join(tmpdir(), `${basename(root)}.ts`)}`], { encoding: "utf8" });
      expect(locked.stdout).toContain(`${root}/.docket belongs to root (uid 0), not to this user (nobody, uid 65534): run docket as that user, or give the folder to this one (sudo chown -R 65534 ${root}/.docket).`);
    } finally {
      rmSync(join(tmpdir(), `${basename(root)}.ts`), { force: true });
      rmSync(root, { recursive: true, force: true });
    }
  });
});

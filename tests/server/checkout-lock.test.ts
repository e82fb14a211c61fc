// The checkout's one-writer lock (runtime/server/checkout-lock.ts) against what code in the
// holder's own process can do to it: opening and closing its files lets SQLite's fcntl lock go,
// and a second server then started beside a frozen first one (tester V, high).
import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkoutFlockHeld, lockCheckout } from "../../runtime/server/checkout-lock.ts";
import { takeFileLock } from "../../runtime/server/_file-lock.ts";
import { createSqliteStore } from "../../runtime/store/sqlite-store.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "docket-lock-")));
mkdirSync(join(root, ".git"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const MODULE = join(import.meta.dir, "..", "..", "runtime", "server", "checkout-lock.ts");

/** Whether another process can take the checkout's lock now ("taken" or "refused"). */
function otherProcessTakes(): string {
  const script = `const { lockCheckout } = await import(${JSON.stringify(MODULE)}); const lock = lockCheckout(${JSON.stringify(root)}); console.log(lock === null ? "refused" : "taken"); lock?.release();`;
  const child = Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
  if (child.exitCode !== 0) throw new Error(`the other process failed: ${child.stderr.toString()}`);
  return child.stdout.toString().trim();
}

describe("lockCheckout", () => {
  test("a serve.lock of random bytes (no database) is made again and taken, not a start refused with advice about space (durability tester, session 49)", () => {
    const lock = lockCheckout(root);
    lock?.release();
    writeFileSync(join(root, ".docket", "serve.lock"), randomBytes(4096));
    const taken = lockCheckout(root);
    expect(taken).not.toBeNull();
    try {
      expect(otherProcessTakes()).toBe("refused");
    } finally {
      taken!.release();
    }
    expect(otherProcessTakes()).toBe("taken");
    // A header a newer SQLite wrote (its read version past this one's): opened read-only, made again too.
    const valid = lockCheckout(root)!;
    valid.release();
    const bytes = readFileSync(join(root, ".docket", "serve.lock"));
    bytes[18] = 3;
    writeFileSync(join(root, ".docket", "serve.lock"), bytes);
    const again = lockCheckout(root);
    expect(again).not.toBeNull();
    again!.release();
  });

  test("a serve.lock that is a FIFO is refused at once, naming it, not a start held in open() for good (checking tester, session 49)", () => {
    const lockPath = join(root, ".docket", "serve.lock");
    rmSync(lockPath, { force: true });
    expect(Bun.spawnSync(["mkfifo", lockPath]).exitCode).toBe(0);
    try {
      expect(() => lockCheckout(root)).toThrow("it is a FIFO (named pipe), no file; remove it, and start again.");
    } finally {
      rmSync(lockPath, { force: true });
    }
    expect(otherProcessTakes()).toBe("taken");
  });

  test("a FIFO as serve.lock's journal, a socket or a folder as serve.lock are refused at once, each named as what it is (checking tester, session 49)", () => {
    const lockPath = join(root, ".docket", "serve.lock");
    lockCheckout(root)?.release();
    expect(Bun.spawnSync(["mkfifo", `${lockPath}-journal`]).exitCode).toBe(0);
    try {
      expect(() => lockCheckout(root)).toThrow("serve.lock-journal is a FIFO (named pipe), no file; remove it, and start again.");
    } finally {
      rmSync(`${lockPath}-journal`, { force: true });
    }
    rmSync(lockPath, { force: true });
    mkdirSync(lockPath);
    try {
      expect(() => lockCheckout(root)).toThrow("it is a folder, no file; remove it, and start again.");
    } finally {
      rmSync(lockPath, { recursive: true, force: true });
    }
    expect(otherProcessTakes()).toBe("taken");
  });

  test("the lock holds when code of the holder's process opens and closes serve.lock and state.db (files.digest of .docket, a backup handler)", () => {
    const lock = lockCheckout(root)!;
    expect(lock).not.toBeNull();
    try {
      expect(otherProcessTakes()).toBe("refused");
      // What reading a file does: open, read, close — each close lets every fcntl lock of the
      // process on that file go.
      readFileSync(lock.path);
      closeSync(openSync(lock.path, "r"));
      closeSync(openSync(join(root, ".docket", "state.db"), "a"));
      expect(otherProcessTakes()).toBe("refused");
    } finally {
      lock.release();
    }
    expect(otherProcessTakes()).toBe("taken");
  });

  test("the lock holds when .docket/ is deleted under the holder (git clean -fdX: .docket/ ignores itself)", () => {
    const lock = lockCheckout(root)!;
    try {
      rmSync(join(root, ".docket"), { recursive: true, force: true });
      expect(otherProcessTakes()).toBe("refused");
    } finally {
      lock.release();
    }
    expect(otherProcessTakes()).toBe("taken");
  });

  test("a second lock in the same process is refused too", () => {
    const first = lockCheckout(root)!;
    try {
      expect(lockCheckout(root)).toBeNull();
    } finally {
      first.release();
    }
  });

  test("waits out a look at the lock (a shared lock held for an instant): a server starting then is not turned away", () => {
    const look = takeFileLock(root, { directory: true, shared: true });
    if (look === null || look === "held") throw new Error(`no shared flock could be had on ${root}: ${look}`);
    const waits: number[] = [];
    // The look ends while the server waits: its next try takes the lock. Before the fix it was refused at once.
    const lock = lockCheckout(root, { wait: (ms) => (waits.push(ms), look.release()) });
    try {
      expect(lock).not.toBeNull();
      expect(waits).toHaveLength(1);
    } finally {
      lock?.release();
      look.release();
    }
  });

  test("is refused, after a few tries, while a server holds the lock", () => {
    const first = lockCheckout(root)!;
    const waits: number[] = [];
    try {
      expect(lockCheckout(root, { wait: (ms) => void waits.push(ms) })).toBeNull();
      expect(waits).toEqual([20, 40, 60, 80]);
    } finally {
      first.release();
    }
  });
});

describe("checkoutFlockHeld", () => {
  test("says whether a server holds the checkout, from this process or another, and leaves a free one free", () => {
    expect(checkoutFlockHeld(root)).toBe(false);
    // The look let its shared lock go: another process takes the checkout's lock right after.
    expect(otherProcessTakes()).toBe("taken");
    const lock = lockCheckout(root)!;
    try {
      expect(checkoutFlockHeld(root)).toBe(true);
      const script = `const { checkoutFlockHeld } = await import(${JSON.stringify(MODULE)}); console.log(checkoutFlockHeld(${JSON.stringify(root)}));`;
      expect(Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe" }).stdout.toString().trim()).toBe("true");
    } finally {
      lock.release();
    }
    expect(checkoutFlockHeld(root)).toBe(false);
  });
});

describe("a checkout deeper than SQLite opens files", () => {
  test("lockCheckout and the sqlite store refuse a path past 504 bytes naming its length and the move to make, not 'unable to open database file' (distribution tester, session 41)", () => {
    let deep = root;
    while (Buffer.byteLength(join(deep, ".docket", "serve.lock")) <= 504) deep = join(deep, "d".repeat(90));
    mkdirSync(join(deep, ".git"), { recursive: true });
    let said = "";
    try {
      lockCheckout(deep)?.release();
    } catch (error) {
      said = (error as Error).message;
    }
    expect(said).toContain("bytes long, and SQLite, which docket keeps it with, opens files of paths of at most 504 bytes. Move the checkout to a shorter path");
    expect(said).not.toContain("unable to open database file");
    expect(existsSync(join(deep, ".docket", "serve.lock"))).toBe(false);
    mkdirSync(join(deep, ".docket"), { recursive: true });
    expect(() => createSqliteStore({ path: join(deep, ".docket", "state.db"), limits: resolveLimits() })).toThrow(/bytes long, and SQLite, which docket keeps it with, opens files of paths of at most 504 bytes/);
  });
});

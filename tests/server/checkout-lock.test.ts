// The checkout's one-writer lock (runtime/server/checkout-lock.ts) against what code in the
// holder's own process can do to it: opening and closing its files lets SQLite's fcntl lock go,
// and a second server then started beside a frozen first one (tester V, high).
import { afterAll, describe, expect, test } from "bun:test";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lockCheckout } from "../../runtime/server/checkout-lock.ts";

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
});

import { closeSync, constants, fstatSync, lstatSync, openSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Database } from "bun:sqlite";
import { sqlitePathTooLong } from "../store/_sqlite-path.ts";
import { docketDirOwnerAdvice, ensureDocketDir } from "./lease.ts";
import { fileLockHeld, takeFileLock, type HeldFileLock } from "./_file-lock.ts";

/** The lock of one checkout's server, held for the server's life (see lockCheckout). */
export interface CheckoutLock {
  /** The lock file, `<root>/.docket/serve.lock`. */
  readonly path: string;
  /** Lets the lock go (the process ending does too, however it ends). */
  release(): void;
}

/**
 * Takes the checkout's one-writer lock (docs/durability.md), before anything of the checkout is
 * opened: `flock` on the checkout's folder (where it can be had, _file-lock.ts) and
 * `.docket/serve.lock` in SQLite's exclusive locking mode, both OS locks held for as long as this
 * process holds them. A second process cannot take them while the first lives — frozen (SIGSTOP) or not — and
 * the kernel lets them go when the holder dies, however it dies. The flock is what holds even
 * when code in this process opens and closes serve.lock (which lets SQLite's `fcntl` lock go),
 * and when .docket/ is deleted under a running server.
 * Answers null when another process holds it.
 *
 * Where bun:sqlite is missing (the Node build), there is no lock: the lease alone keeps a second
 * server away, and only from a holder that answers (docs/durability.md says so).
 */
export function lockCheckout(root: string, options: CheckoutLockOptions = {}): CheckoutLock | null {
  const path = join(ensureDocketDir(root), "serve.lock");
  let sqlite: typeof import("bun:sqlite");
  try {
    sqlite = require("bun:sqlite") as typeof import("bun:sqlite");
  } catch {
    return { path, release: () => {} };
  }
  let flock: HeldFileLock | "held" | null;
  try {
    // On the checkout's folder itself: `git clean -fdX` removes .docket/ (it ignores itself) and
    // a lock on a file in it with it, and a second server then started beside a running one.
    // Held: asked again a few times, since a look at the lock (`checkoutFlockHeld`, which docket run,
    // mcp and executions take for an instant) would otherwise turn away a server starting then.
    for (let attempt = 1; ; attempt++) {
      flock = takeFileLock(root, { directory: true });
      if (flock !== "held" || attempt >= HELD_TRIES) break;
      (options.wait ?? pause)(HELD_PAUSE_MS * attempt);
    }
  } catch (error) {
    throw new CheckoutLockError(`Cannot take the lock of ${root}: ${error instanceof Error ? error.message : String(error)}.`);
  }
  if (flock === "held") return null;
  // Before the file is made: a lock SQLite cannot open is refused leaving nothing behind.
  const tooLong = sqlitePathTooLong(path);
  if (tooLong !== null) {
    flock?.release();
    throw new CheckoutLockError(`Cannot take the lock of ${root} (${path}): ${tooLong}.`);
  }
  try {
    // Created private before SQLite opens it: SQLite would create it world-readable. Never
    // waiting (a FIFO there held every start in open() for good: checking tester, session 49),
    // and only a file.
    const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
    const regular = fstatSync(fd).isFile();
    closeSync(fd);
    if (!regular) throw Object.assign(new Error(`it ${oddFile(path) ?? "is no regular file"}; remove it, and start again`), { code: "ODD_FILE" });
    // SQLite's journal beside it is opened too, blocking: a FIFO there held every start as well.
    const journal = oddFile(`${path}-journal`);
    if (journal !== null) throw Object.assign(new Error(`${path}-journal ${journal}; remove it, and start again`), { code: "ODD_FILE" });
  } catch (error) {
    flock?.release();
    const owner = docketDirOwnerAdvice(root);
    const code = (error as NodeJS.ErrnoException).code;
    // A FIFO no one reads (or a socket) refuses a non-blocking open for writing; a folder EISDIR: said as what each is.
    const odd = code === "ENXIO" || code === "EISDIR" ? oddFile(path) : null;
    const why = odd !== null ? `it ${odd}; remove it, and start again` : error instanceof Error ? error.message : String(error);
    const told = odd !== null || code === undefined || code === "ODD_FILE";
    throw new CheckoutLockError(`Cannot take the lock of ${root} (${path}): ${why}.${owner || (told ? "" : " Check that .docket/ is writable, that serve.lock is no link, and that its disk has space.")}`);
  }
  /** serve.lock opened and its exclusive lock taken; the connection closed again when that fails. */
  const take = (): Database => {
    const db = new sqlite.Database(path, { create: true, readwrite: true });
    try {
      db.run("PRAGMA busy_timeout = 0");
      db.run("PRAGMA locking_mode = EXCLUSIVE");
      // The first write takes the exclusive lock; the locking mode keeps it until close.
      db.run("BEGIN EXCLUSIVE");
      db.run("COMMIT");
      return db;
    } catch (error) {
      db.close(false);
      throw error;
    }
  };
  let held: Database;
  try {
    try {
      held = take();
    } catch (error) {
      // serve.lock holds nothing but its lock: one that is no database (overwritten, a disk
      // fault, a header of a newer SQLite) is made again, never a start refused with advice about
      // space (durability tester, session 49). No server holds a file SQLite cannot read as its lock.
      if (!isNotDatabase(error)) throw error;
      rmSync(path, { force: true });
      closeSync(openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600));
      held = take();
    }
  } catch (error) {
    flock?.release();
    if (isBusy(error)) return null;
    const owner = docketDirOwnerAdvice(root);
    throw new CheckoutLockError(`Cannot take the lock of ${root} (${path}): ${error instanceof Error ? error.message : String(error)}.${owner || " Check that .docket/ is writable and that its disk has space."}`);
  }
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      held.close(false);
      flock?.release();
    },
  };
}

/**
 * Whether a server holds the flock of the checkout `root` (lockCheckout), seen from any process
 * and any pid namespace; undefined where flock cannot be had here. Looked at through a shared
 * lock held for an instant, which lockCheckout waits out.
 */
export function checkoutFlockHeld(root: string): boolean | undefined {
  return fileLockHeld(root);
}

/**
 * A shared lock on the checkout's folder, held while a `docket run` without a server looks up and
 * leaves its run_id's mark (docs/protocol.md, "A run without a server"): "held" when a server holds
 * the checkout, null where flock cannot be had here. A server starting meanwhile waits it out
 * (lockCheckout asks again), and once it holds the checkout it reads every mark left before.
 */
export function holdCheckoutShared(root: string): HeldFileLock | "held" | null {
  return takeFileLock(root, { directory: true, shared: true });
}

/**
 * The lock that lets runs without a server claim their run_ids one at a time (`.docket/runs.lock`,
 * exclusive among them; a server never takes it): two claims at once would each open the store
 * file a server left, and SQLite lets only one do so. Asked again for up to `waitMs` (a claim
 * holds it for milliseconds); "held" past that, null where flock cannot be had here.
 */
export function holdRunClaims(root: string, waitMs = RUN_CLAIMS_WAIT_MS): HeldFileLock | "held" | null {
  const path = join(ensureDocketDir(root), "runs.lock");
  for (const until = Date.now() + waitMs; ; ) {
    const lock = takeFileLock(path);
    if (lock !== "held" || Date.now() >= until) return lock;
    pause(5);
  }
}

/** How long a run waits for the others' claims (each holds the lock for milliseconds). */
const RUN_CLAIMS_WAIT_MS = 10_000;

/** Options of lockCheckout. */
export interface CheckoutLockOptions {
  /** Waits this long before the flock is asked again (default: blocks the thread; a test lets the lock go instead). */
  wait?: (ms: number) => void;
}

/** How many times a held flock is asked for: a look holds it for microseconds, a server for its life. */
const HELD_TRIES = 5;
/** The first pause between two tries; each next one is longer by as much (20, 40, 60, 80 ms: 200 ms in all). */
const HELD_PAUSE_MS = 20;

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** True for SQLite's "the file is locked by someone else". */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}

/** What stands at `path` when it is there and no regular file ("is a FIFO (named pipe), no file"), else null. */
function oddFile(path: string): string | null {
  let stat;
  try {
    stat = lstatSync(path);
  } catch {
    return null;
  }
  if (stat.isFile()) return null;
  if (stat.isFIFO()) return "is a FIFO (named pipe), no file";
  if (stat.isSocket()) return "is a socket, no file";
  if (stat.isDirectory()) return "is a folder, no file";
  if (stat.isSymbolicLink()) return "is a symbolic link, which docket does not follow there";
  return "is a device, no file";
}

/** SQLite read the lock file as no database of its own (random bytes, a file cut mid-page). */
function isNotDatabase(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  // SQLITE_READONLY too: a header whose read/write versions are of a newer SQLite (a damaged byte) opens read-only.
  return typeof code === "string" && (code.startsWith("SQLITE_NOTADB") || code.startsWith("SQLITE_CORRUPT") || code.startsWith("SQLITE_READONLY"));
}

/** The checkout's lock file could not be written (a read-only or full disk): the operator's to fix. */
export class CheckoutLockError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CheckoutLockError";
  }
}

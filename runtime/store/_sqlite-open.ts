import type { Database } from "bun:sqlite";
import { closeSync, constants, fchmodSync, fstatSync, lstatSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { sqlitePathTooLong } from "./_sqlite-path.ts";
import { firstOwnerAdvice } from "./owner-advice.ts";
import type { Limits } from "../execution/limits.ts";
import { FULL_DISK_REMEDY, prepareSchema, StoreFileError } from "./_sqlite-schema.ts";
import { prepareTables, type StoreTables } from "./_sqlite-tables.ts";
import { storeFileIdentity } from "./_sqlite-file-identity.ts";
import { createWriteBehind, type WriteBehind, type WriteBehindOptions } from "./_sqlite-writer.ts";
import { createLogSync } from "./_sqlite-log-sync.ts";
import { createLogBound } from "./_sqlite-log-bound.ts";

const HOUR = 3_600_000;

/** The store's file, open: the connection, its statements, and the write-behind over them. */
export interface OpenFile {
  db: Database;
  tables: StoreTables;
  writer: WriteBehind;
  /** The write-ahead log was cut in place by something else: it must not be copied into the file (_sqlite-file-identity.ts). */
  logCut: () => boolean;
  /** Why the files are not the ones opened, or null; and, after a write of the store's own outside the writer, its sizes noted (_sqlite-file-identity.ts). */
  fileGone: () => string | null;
  filesSettled: () => void;
}

/** Options of {@link openStoreFile}. */
export interface OpenFileOptions {
  path: string;
  limits: Limits;
  /** Told when a write nobody waits for fails; it is retried. */
  onPersistError: (error: unknown) => void;
  onCommit: WriteBehindOptions["onCommit"];
  maxSnapshotChars: number;
  onUnwritable: WriteBehindOptions["onUnwritable"];
  cadence?: WriteBehindOptions["cadence"];
  onWritten?: WriteBehindOptions["onWritten"];
  onFailed?: WriteBehindOptions["onFailed"];
  committedSnapshot?: WriteBehindOptions["committedSnapshot"];
}

/**
 * Opens the file (created when missing), brings it to the current schema and prepares the
 * statements and the write-behind. It loads nothing: the store does that, with what this returns.
 * Any failure closes the connection and becomes a StoreFileError naming the file.
 */
export function openStoreFile(options: OpenFileOptions): OpenFile {
  const { path, limits } = options;
  // Loaded here, on first use: a static import would be hoisted to the top of a bundle that
  // inlines this module (the Node bundle has no code splitting), and Node cannot load `bun:`.
  let sqlite: typeof import("bun:sqlite");
  try {
    sqlite = require("bun:sqlite") as typeof import("bun:sqlite");
  } catch {
    throw new Error(`The sqlite execution store needs Bun (bun:sqlite), and this is ${process.versions.bun ? `Bun ${process.versions.bun} without it` : `Node.js ${process.versions.node}`}; use the memory store (--store memory) here.`);
  }
  let db: Database | null = null;
  try {
    const tooLong = sqlitePathTooLong(path);
    if (tooLong !== null) throw new Error(`Cannot open the execution store ${path}: ${tooLong}.`);
    refuseLinkedCompanions(path);
    refuseLogWithoutFile(path);
    // Created private before SQLite opens it (SQLite creates 0644, and gives its log the file's
    // mode) — never through a link: a state.db committed as a link to a file outside the checkout
    // made the store, and narrowed the mode of, that file.
    // Nor waiting on a named pipe put there: opened for writing, one with no reader held the
    // start in open() for good, saying nothing (checking testers, session 50).
    const notAFile = (what: string) => new Error(`it is ${what}, not a file`);
    let fd: number;
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | (constants.O_NONBLOCK ?? 0), 0o600);
    } catch (error) {
      // A pipe with no reader refuses a write-only open that does not wait.
      throw (error as NodeJS.ErrnoException).code === "ENXIO" ? notAFile("a named pipe (FIFO)") : error;
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile()) throw notAFile(stat.isFIFO() ? "a named pipe (FIFO)" : stat.isSocket() ? "a socket" : "not a regular file");
      if ((stat.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    } finally {
      closeSync(fd);
    }
    db = new sqlite.Database(path, { create: true, readwrite: true, strict: true });
    prepareSchema(db, path);
    // Before anything of the file is loaded or written: the log a crash left is copied in first.
    const logBound = createLogBound(db, path);
    const tables = prepareTables(db);
    const identity = storeFileIdentity(path, () => logBound.markBytes());
    const writer = createWriteBehind({
      db,
      tables,
      // A running execution's snapshot is rewritten at least this often, so that the events
      // open folds into it are always still retained.
      snapshotEvery: Math.max(1, Math.floor(limits.events_retained / 2)),
      onError: options.onPersistError,
      onCommit: options.onCommit,
      maxSnapshotChars: options.maxSnapshotChars,
      onUnwritable: options.onUnwritable,
      logSync: createLogSync(`${path}-wal`),
      logBound,
      cadence: options.cadence,
      onWritten: options.onWritten,
      onFailed: options.onFailed,
      committedSnapshot: options.committedSnapshot,
      fileGone: identity.changed,
      filesSettled: identity.settled,
    });
    return { db, tables, writer, logCut: identity.logCut, fileGone: identity.changed, filesSettled: identity.settled };
  } catch (error) {
    db?.close(false);
    throw asFileError(path, error);
  }
}

/** The files SQLite and the store keep beside the database, under its name. */
const COMPANIONS = ["-wal", "-shm", "-journal", "-starting"];

/**
 * Refuses a companion file that is a symbolic link, naming it: SQLite refuses a linked log too,
 * but with its generic "unable to open database file", which names neither the link nor the fix.
 */
function refuseLinkedCompanions(path: string): void {
  for (const suffix of COMPANIONS) {
    const companion = `${path}${suffix}`;
    const found = lstatSync(companion, { throwIfNoEntry: false });
    if (found?.isSymbolicLink()) {
      throw new StoreFileError(companion, "it is a symbolic link, and docket opens none of its store's files through one (one could lead out of the checkout)", `Remove the link (rm ${companion}): the store makes the file again when it needs it.`);
    }
    // A folder or a pipe where a companion goes holds none of the history: that one is moved, not the store.
    if (found !== undefined && !found.isFile()) {
      throw new StoreFileError(companion, `it is ${found.isDirectory() ? "a folder" : "not a regular file (a pipe, a socket or a device)"}, where the store keeps a file of its own`, `Move it aside (mv ${companion} ${companion}.moved): the store itself is untouched and keeps its history, and makes the file again when it needs it.`);
    }
  }
}

/**
 * Refuses a store file that is empty or missing while its write-ahead log holds something: the
 * history is in the log, and the file it belongs to is lost. SQLite would take the empty file for
 * a new database and delete the log; a file in write-ahead mode never is empty (switching to it
 * writes the first page), so this is only ever a file emptied, deleted or left behind by a copy.
 */
function refuseLogWithoutFile(path: string): void {
  const log = lstatSync(`${path}-wal`, { throwIfNoEntry: false });
  if (log === undefined || log.size === 0) return;
  const file = lstatSync(path, { throwIfNoEntry: false });
  if (file !== undefined && file.size > 0) return;
  throw new StoreFileError(
    path,
    `it is ${file === undefined ? "missing" : "empty"}, while its write-ahead log ${path}-wal holds ${log.size} bytes: the history is in the log, and the file it belongs to is lost (emptied, deleted, or not copied with it)`,
    `Put back the state.db that goes with the log (from the copy or backup it came from), or move the log aside too (${path}-wal) to start with an empty history, or start with --store memory; docket opens neither as it is, since SQLite would delete the log.`,
  );
}

/** Any error of opening or loading the file, as the StoreFileError that names it. */
export function asFileError(path: string, error: unknown): StoreFileError {
  if (error instanceof StoreFileError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === "ELOOP") return new StoreFileError(path, "it is a symbolic link, and docket opens its store through none (one could lead out of the checkout)", `Remove the link (rm ${path}): the next start makes the file.`);
  const full = (typeof code === "string" && (code.startsWith("SQLITE_FULL") || code === "ENOSPC")) || /\bENOSPC\b|disk is full|No space left/i.test(message);
  const denied = code === "EACCES" || code === "EPERM" || (typeof code === "string" && code.startsWith("SQLITE_READONLY") && code !== "SQLITE_READONLY_RECOVERY");
  // SQLite says only "unable to open" of a log or shared-memory file it may not open: whose is said when one is another user's.
  const foreign = denied || code === "SQLITE_CANTOPEN" || code === "SQLITE_PERM" ? firstOwnerAdvice([path, ...COMPANIONS.map((suffix) => `${path}${suffix}`)], dirname(path)) : null;
  const remedy = full ? FULL_DISK_REMEDY : denied || foreign !== null ? forbiddenRemedy(foreign) : code === "EROFS" ? READ_ONLY_REMEDY : undefined;
  return new StoreFileError(path, `${message}${typeof code === "string" ? ` (${code})` : ""}`, remedy);
}

/** The file system holding the store takes no writes: nothing is wrong with the file. */
const READ_ONLY_REMEDY = "The file system holding it is read-only: serve from a checkout on a writable disk, or start with --store memory; nothing in the file is lost.";

/**
 * What to do when this process may not open the file, or make its log in its folder: whose they
 * are, and who asks. Moving the file aside would hide a history that is whole (checking tester: a
 * state.db left by `sudo docket serve` was answered "move it aside").
 */
function forbiddenRemedy(owner: string | null): string {
  return `${owner === null ? "This user may not write it or its folder: give this user the right to (chmod), or run docket as one who has it" : `${owner[0]!.toUpperCase()}${owner.slice(1)}`}; nothing in the file is lost, and moving it aside would only hide its history.`;
}

/** Options of {@link startExpiry}. */
export interface ExpiryOptions {
  /** How often; default an hour, or `details_retention_ms` when that is shorter. */
  everyMs?: number;
  limits: Limits;
  /** Told when a run of expiry fails; the next one tries again. */
  onError: (error: unknown) => void;
}

/** Runs `expire` on a timer that never keeps the process alive (expiry is housekeeping); answers the timer, for close. */
export function startExpiry(expire: () => void, options: ExpiryOptions): ReturnType<typeof setInterval> {
  const timer = setInterval(() => {
    try {
      expire();
    } catch (error) {
      options.onError(error);
    }
  }, options.everyMs ?? Math.min(HOUR, options.limits.details_retention_ms));
  timer.unref?.();
  return timer;
}

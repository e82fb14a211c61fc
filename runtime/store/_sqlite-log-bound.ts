import type { Database } from "bun:sqlite";
import { statfsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { formatBytes } from "../execution/storage-gate.ts";
import { FULL_DISK_REMEDY, StoreFileError } from "./_sqlite-schema.ts";

/**
 * The most the write-ahead log holds before the commit that crosses it checkpoints (SQLite's
 * `wal_autocheckpoint`), on a disk with room. The store checkpoints when writes pause
 * (createWriteBehind); this is the backstop for a store that never pauses: 64 MiB instead of
 * SQLite's 1,000 pages. Its first sync, of the whole log, is mostly done by then
 * (_sqlite-log-sync.ts). Smaller marks measured worse: each checkpoint also syncs the database,
 * a few milliseconds however little it copies.
 */
export const LOG_MARK_BYTES = 64 * 1024 * 1024;
/**
 * The least the mark goes down to on a small disk: 1 MiB. Below it, checkpoints (a few
 * milliseconds each) would come every few commits of a busy store.
 */
export const LOG_MARK_MIN_BYTES = 1024 * 1024;
/**
 * The log may take this share of the room it has — the disk's free space and the log's own file.
 * A log at its mark, plus one transaction past it, is copied by the checkpoint into the database,
 * which may grow by as much: the store alone needs twice the mark. A quarter leaves half the room
 * to the data the store goes on writing, and to everything else on the disk.
 */
const ROOM_SHARE = 4;

/** The log's mark, in bytes, for `room` bytes (free space and the log's file): see ROOM_SHARE. */
export function logMarkBytes(room: number): number {
  return Math.max(LOG_MARK_MIN_BYTES, Math.min(LOG_MARK_BYTES, Math.floor(room / ROOM_SHARE)));
}

/** Keeps the store's log within the disk it is on (see {@link createLogBound}). */
export interface LogBound {
  /** Measures the room again and moves the mark when it changed: about once a second while writes go on, and once they pause. */
  measure(): void;
  /** Copies the log into the database and empties its file (see emptyLog); throws as emptyLog does. */
  empty(): void;
  /** The mark in force, in bytes. */
  markBytes(): number;
}

/** Options of {@link createLogBound}. */
export interface LogBoundOptions {
  /** Bytes this user may still write on the disk of `dir`, or null when unknown; default `statfs`. */
  freeBytes?: (dir: string) => number | null;
}

/**
 * Empties the log (see emptyLog), then sets its mark (`wal_autocheckpoint`, and
 * `journal_size_limit`: the file is cut back to it when the log starts over) to a quarter of the
 * room the log has, at most 64 MiB. On a disk with 256 MiB free or more that is 64 MiB, as it
 * always was; on a small one (a disk that small runs with `disk_free_floor_bytes` 0,
 * docs/limits.md) the log checkpoints sooner instead of filling the disk by itself: one execution
 * logging a line every 2 ms wrote ~17 MiB of log a second for ~120 KiB of events (each commit
 * writes whole 16 KiB pages: its row's and its events', for one line), and took an 8 MiB disk
 * whole before a second had passed. Measured about once a second (createWriteBehind) — a statfs
 * and a stat, microseconds — and nothing on a commit's path.
 */
export function createLogBound(db: Database, path: string, options: LogBoundOptions = {}): LogBound {
  const dir = dirname(path);
  const freeBytes = options.freeBytes ?? statfsFree;
  const pageSize = Number(db.query("PRAGMA page_size").values()[0]![0]);
  let pages = 0;

  function measure(): void {
    const free = freeBytes(dir);
    // Unknown (no statfs here): the mark for a disk with room, as before.
    const mark = free === null ? LOG_MARK_BYTES : logMarkBytes(free + logBytes(path));
    const next = Math.max(1, Math.floor(mark / pageSize));
    if (next === pages) return;
    pages = next;
    db.run(`PRAGMA wal_autocheckpoint = ${pages}`);
    // The log is reused from its start after each checkpoint; one transaction larger than the mark
    // (a huge snapshot), or a mark lowered since, would leave the file that large: past it, it is
    // cut back.
    db.run(`PRAGMA journal_size_limit = ${pages * pageSize}`);
  }

  emptyLog(db, path);
  measure();
  return { measure, empty: () => emptyLog(db, path), markBytes: () => pages * pageSize };
}

/** The bytes of the log's file (0 when there is none, or it cannot be read: then the free space alone is the room). */
function logBytes(path: string): number {
  try {
    return statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  } catch {
    return 0;
  }
}

function statfsFree(dir: string): number | null {
  try {
    const { bavail, bsize } = statfsSync(dir);
    return bavail * bsize;
  } catch {
    return null;
  }
}

/**
 * Copies the whole log into the database and empties its file (a TRUNCATE checkpoint), giving
 * its space back to the disk. The store does it when it opens — so that a full disk is met here,
 * where the error can say what to free, and not by the first write of a store the log filled —
 * and before each retry of a write that failed (see createWriteBehind): a write the full disk
 * refused cannot checkpoint, and the log it left holds the space the next write needs.
 *
 * Throws a StoreFileError saying how many bytes to free when the database cannot grow enough to
 * take the log's pages (the disk full); anything else as SQLite threw it.
 */
export function emptyLog(db: Database, path: string): void {
  try {
    db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code !== "string" || !code.startsWith("SQLITE_FULL")) throw error;
    throw new StoreFileError(path, `${error instanceof Error ? error.message : String(error)} (${code})`, fullDiskRemedy(db, path));
  }
}

/** What to free for the log to be copied in: the bytes the database must grow by, when SQLite says. */
function fullDiskRemedy(db: Database, path: string): string {
  let grow = 0;
  try {
    const [[pageCount]] = db.query("PRAGMA page_count").values() as [[number]];
    const pageSize = Number(db.query("PRAGMA page_size").values()[0]![0]);
    grow = pageCount * pageSize - statSync(path).size;
  } catch {
    // Not known: the general remedy.
  }
  if (grow <= 0) return FULL_DISK_REMEDY;
  const log = logBytes(path);
  return `Its log (${path}-wal, ${formatBytes(log)}) is copied into it first, which needs ${formatBytes(grow)} (${grow} bytes) more on its disk: free at least that much and start again — the log's ${formatBytes(log)} are given back once it is copied. Nothing in the file is lost, and moving it aside would only hide its history.`;
}

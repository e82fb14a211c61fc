import type { Database } from "bun:sqlite";

/** The schema this version writes and reads; `PRAGMA user_version` holds it in the file. */
export const STORE_SCHEMA_VERSION = 1;
const PAGE_SIZE = 16 * 1024;
const AUTOCHECKPOINT_PAGES = 4096;

// One row per execution: the columns the store indexes, filters and loads on open, and the
// snapshot as JSON (current as of the snapshot's own `last_sequence`; the events after it are
// folded in on open). `ord` is the creation order: the list order and what a list cursor names,
// so cursors keep working across restarts. `finished_at` is ISO 8601 UTC from toISOString, which
// orders as text.
//
// Events are kept in chunks: one row holds a run of consecutive events of one execution (their
// JSON separated by commas: a JSON array without its brackets), keyed by the last sequence in it. A row per event costs SQLite more than the whole
// memory-store append does (measured: ~1.5–2 µs a row against ~1 µs an append), a chunk costs
// about one copy of the bytes the fan-out already serialized.
const SCHEMA_V1 = `
CREATE TABLE executions (
  ord             INTEGER PRIMARY KEY,
  id              TEXT    NOT NULL UNIQUE,
  capability      TEXT    NOT NULL,
  state           TEXT    NOT NULL,
  finished_at     TEXT,
  last_sequence   INTEGER NOT NULL,
  retained_from   INTEGER NOT NULL,
  details_expired INTEGER NOT NULL DEFAULT 0,
  snapshot        TEXT    NOT NULL
);
CREATE INDEX executions_by_state ON executions (state);
CREATE INDEX executions_by_capability ON executions (capability);
CREATE INDEX executions_expiring ON executions (finished_at) WHERE details_expired = 0 AND finished_at IS NOT NULL;
CREATE TABLE events (
  execution_id   TEXT    NOT NULL,
  sequence       INTEGER NOT NULL,
  first_sequence INTEGER NOT NULL,
  json           TEXT    NOT NULL,
  PRIMARY KEY (execution_id, sequence)
) WITHOUT ROWID;
CREATE TABLE run_identities (
  run_id       TEXT PRIMARY KEY,
  execution_id TEXT NOT NULL,
  capability   TEXT NOT NULL,
  input_hash   TEXT NOT NULL
) WITHOUT ROWID;
`;

/**
 * Thrown when the store's file cannot be used. The message names the file, says why, and what
 * to do; the file is never emptied or replaced to get past it (that would be silent data loss).
 */
export class StoreFileError extends Error {
  constructor(readonly path: string, reason: string) {
    super(
      `Cannot open the execution store ${path}: ${reason}. Move the file aside (with ${path}-wal and ${path}-shm, if present) to start with an empty history, or start with --store memory; docket never deletes or empties it.`,
    );
    this.name = "StoreFileError";
  }
}

/** True for SQLite's "the file is locked by someone else". */
function isLocked(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}

/** The value of a single-valued pragma. */
function pragma(db: Database, name: string): unknown {
  const row = db.query(`PRAGMA ${name}`).values()[0];
  return row?.[0];
}

/**
 * Sets the connection up (WAL, `synchronous = NORMAL`: a commit is not an fsync, a power loss
 * may lose the last commits but never corrupts the file) and brings a new file to the current
 * schema. A file of this schema is accepted; a file of a newer one, or one holding tables of
 * something else, is refused rather than touched.
 */
export function prepareSchema(db: Database, path: string): void {
  // One writer (docs/durability.md): the connection holds the file exclusively for its life, an
  // OS lock no other process gets while this one lives, frozen or not. Set before the first
  // access, it also keeps the log's index in memory (no -shm file). Refused at once, not after a wait.
  db.run("PRAGMA locking_mode = EXCLUSIVE");
  db.run("PRAGMA busy_timeout = 0");
  let version: number;
  try {
    // Checked before anything writes: a foreign or newer file must stay as it was.
    version = Number(pragma(db, "user_version"));
  } catch (error) {
    if (isLocked(error)) throw new StoreFileError(path, "another process holds it (another docket serve on this checkout?); stop that one first, or use it");
    throw error;
  }
  if (version > STORE_SCHEMA_VERSION) throw new StoreFileError(path, `it was written by a newer docket (store schema ${version}; this one reads up to ${STORE_SCHEMA_VERSION}); use that version, or a new file`);
  if (version === 0 && Number(db.query("SELECT count(*) FROM sqlite_schema").values()[0]![0]) > 0) {
    throw new StoreFileError(path, "it is an SQLite database, but not a docket execution store");
  }
  // A new file gets 16 KiB pages (fixed once the file is initialized): an event chunk of up to
  // 64 KiB then spans 4 overflow pages instead of 16, and the file takes fewer, larger writes
  // (measured: ~15 % less time per appended event than 4 KiB pages).
  if (version === 0) db.run(`PRAGMA page_size = ${PAGE_SIZE}`);
  const mode = String(pragma(db, "journal_mode = WAL")).toLowerCase();
  if (mode !== "wal") throw new StoreFileError(path, `SQLite would not switch it to write-ahead logging (journal mode stays ${mode})`);
  db.run("PRAGMA synchronous = NORMAL");
  // The first write takes the exclusive lock, and the locking mode keeps it until close.
  try {
    db.run("BEGIN EXCLUSIVE");
    db.run("COMMIT");
  } catch (error) {
    if (isLocked(error)) throw new StoreFileError(path, "another process holds it (another docket serve on this checkout?); stop that one first, or use it");
    throw error;
  }
  // The store checkpoints when writes pause (createWriteBehind); SQLite's own checkpoint, which
  // runs inside the commit that crosses the mark and syncs the disk twice, is only the backstop
  // for a store that never pauses: at 4,096 pages (64 MiB of log) instead of 1,000. Its first sync,
  // of the whole log, is mostly done by then (_sqlite-log-sync.ts). Smaller marks measured worse:
  // each checkpoint also syncs the database, a few milliseconds however little it copies.
  db.run(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  // The log is reused from its start after each checkpoint; one transaction larger than the mark
  // (a huge snapshot) would leave the file that large for good: past it, the file is cut back.
  db.run(`PRAGMA journal_size_limit = ${AUTOCHECKPOINT_PAGES * PAGE_SIZE}`);
  if (version === STORE_SCHEMA_VERSION) return;
  // Later schema versions migrate here, one step at a time, each in its own transaction.
  db.transaction(() => {
    db.run(SCHEMA_V1);
    db.run(`PRAGMA user_version = ${STORE_SCHEMA_VERSION}`);
  })();
}

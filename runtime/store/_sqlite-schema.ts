import type { Database } from "bun:sqlite";

/** The schema this version writes and reads; `PRAGMA user_version` holds it in the file. */
export const STORE_SCHEMA_VERSION = 3;
const PAGE_SIZE = 16 * 1024;

// One row per execution: the columns the store filters and loads on open, and the snapshot as
// JSON (current as of the snapshot's own `last_sequence`; the events after it are folded in on
// open). `ord` is the creation order: the list order, what a list cursor names (so cursors keep
// working across restarts), and the key every statement finds a row by. `finished_at` is ISO 8601
// UTC from toISOString, which orders as text.
//
// Events are kept in chunks: one row holds a run of consecutive events of one execution (their
// JSON separated by commas: a JSON array without its brackets), keyed by the execution's `ord` and
// the last sequence in it. A row per event costs SQLite more than the whole memory-store append
// does (measured: ~1.5–2 µs a row against ~1 µs an append), a chunk costs about one copy of the
// bytes the fan-out already serialized.
//
// Every page a commit changes is written whole to the log, and the bytes written are what a
// commit costs (measured: the kernel's write path was half the store's time). So the rows a busy
// store writes sit together: keyed by `ord`, new executions and their events go to the last
// pages, forgotten ones leave from the first. Keyed by the random id (schema 1), each execution's
// events landed on a page of their own, and the id, state and capability indexes each added a
// page or two to every commit: ~9 pages of 16 KiB per commit, for one or two executions. Memory
// holds every retained execution's id, state, capability and finish time, so nothing looks them
// up in the file: a list filtered by state or capability walks memory's entries, as the memory
// store's list does, and expiry finds what finished when in memory (no index at all: the one
// on `finished_at` alone was a page of nearly every commit).
const EXECUTIONS_V2 = `
CREATE TABLE executions (
  ord             INTEGER PRIMARY KEY,
  id              TEXT    NOT NULL,
  capability      TEXT    NOT NULL,
  state           TEXT    NOT NULL,
  finished_at     TEXT,
  last_sequence   INTEGER NOT NULL,
  retained_from   INTEGER NOT NULL,
  details_expired INTEGER NOT NULL DEFAULT 0,
  snapshot        TEXT    NOT NULL
);
CREATE TABLE events (
  execution_ord  INTEGER NOT NULL,
  sequence       INTEGER NOT NULL,
  first_sequence INTEGER NOT NULL,
  json           TEXT    NOT NULL,
  PRIMARY KEY (execution_ord, sequence)
) WITHOUT ROWID;
`;
const RUN_IDENTITIES = `
CREATE TABLE run_identities (
  run_id       TEXT PRIMARY KEY,
  execution_id TEXT NOT NULL,
  capability   TEXT NOT NULL,
  input_hash   TEXT NOT NULL
) WITHOUT ROWID;
`;

// Schema 1 → 2: the same rows, keyed by `ord` (see above). The tables are copied, since SQLite
// cannot drop a UNIQUE constraint or change a primary key in place; run_identities stays as it is.
const MIGRATE_1_TO_2 = `
DROP INDEX executions_by_state;
DROP INDEX executions_by_capability;
DROP INDEX executions_expiring;
ALTER TABLE executions RENAME TO executions_v1;
ALTER TABLE events RENAME TO events_v1;
${EXECUTIONS_V2}
INSERT INTO executions (ord, id, capability, state, finished_at, last_sequence, retained_from, details_expired, snapshot)
  SELECT ord, id, capability, state, finished_at, last_sequence, retained_from, details_expired, snapshot FROM executions_v1 ORDER BY ord;
INSERT INTO events (execution_ord, sequence, first_sequence, json)
  SELECT x.ord, e.sequence, e.first_sequence, e.json FROM events_v1 e JOIN executions_v1 x ON x.id = e.execution_id ORDER BY x.ord, e.sequence;
DROP TABLE events_v1;
DROP TABLE executions_v1;
`;

// Schema 2 → 3: an execution's first events in its own row (`head`, events 1..`head_last`; the
// events rows hold only later ones; see HEAD_BYTES): a commit of a short execution then writes one
// table instead of two. Rows of schema 2 keep their events where they are (`head_last` 0).
const MIGRATE_2_TO_3 = `
ALTER TABLE executions ADD COLUMN head TEXT;
ALTER TABLE executions ADD COLUMN head_last INTEGER NOT NULL DEFAULT 0;
`;

/**
 * Thrown when the store's file cannot be used. The message names the file, says why, and what
 * to do; the file is never emptied or replaced to get past it (that would be silent data loss).
 */
export class StoreFileError extends Error {
  /** `remedy`: what to do, when moving the file aside is not it (a full disk: nothing is wrong with the file). */
  constructor(readonly path: string, reason: string, remedy?: string) {
    super(
      `Cannot open the execution store ${path}: ${reason}. ${remedy ?? `Move the file aside (with ${path}-wal, ${path}-shm and ${path}-starting, if present) to start with an empty history, or start with --store memory; docket never deletes or empties it.`}`,
    );
    this.name = "StoreFileError";
  }
}

/** What to do when the store cannot be opened for want of space: its history is whole. */
export const FULL_DISK_REMEDY =
  "The disk (or the folder's quota) is full: free some space and start again — nothing in the file is lost, and moving it aside would only hide its history.";

/**
 * What SQLite said when an error means the file itself is damaged or unreadable — a page it
 * cannot make sense of (SQLITE_CORRUPT), a file that is no database (SQLITE_NOTADB), a read the
 * disk failed (SQLITE_IOERR), a stored JSON record that no longer parses — or null for any other
 * error. Asked of errors thrown by the store's reads only.
 */
export function damageOf(error: unknown): string | null {
  // Damage inside a row SQLite reads fine (an event's bytes overwritten): the store wrote only
  // JSON there, so a row that does not parse as JSON is one damaged since (checking tester).
  if (error instanceof SyntaxError) return `a stored record does not parse as JSON: ${error.message}`;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !/^SQLITE_(CORRUPT|NOTADB|IOERR)/.test(code)) return null;
  return `${error instanceof Error ? error.message : String(error)}, ${code}`;
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
  // The log's mark (wal_autocheckpoint) is set once the file is open: see _sqlite-log-bound.ts.
  if (version === STORE_SCHEMA_VERSION) return;
  // A new file gets schema 2 and the steps after it; an older one migrates one step at a time,
  // each step in its own transaction (a failed step leaves the file as the last step did).
  if (version === 0) {
    db.transaction(() => {
      db.run(EXECUTIONS_V2 + RUN_IDENTITIES + MIGRATE_2_TO_3);
      db.run(`PRAGMA user_version = ${STORE_SCHEMA_VERSION}`);
    })();
    return;
  }
  if (version === 1) {
    db.transaction(() => {
      db.run(MIGRATE_1_TO_2);
      db.run("PRAGMA user_version = 2");
    })();
  }
  db.transaction(() => {
    db.run(MIGRATE_2_TO_3);
    db.run("PRAGMA user_version = 3");
  })();
}

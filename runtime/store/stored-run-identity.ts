import type { Database } from "bun:sqlite";
import { existsSync, statSync } from "node:fs";
import type { RunIdentity } from "./store.ts";

/**
 * The run identity that the checkout's store file (`.docket/state.db`) holds for `runId`, read by
 * a `docket run` that found no server (docs/protocol.md, "A run without a server"): a run_id a
 * server took before it stopped or died is that execution's, and a run with it must not run again.
 *
 * Only while no server holds the file: the caller holds the checkout's shared lock, which a
 * server's lock excludes. Opened the way the server opens it (exclusive locking: no `-shm` file is
 * left behind), so that a log a killed server left is read as the server would read it; closing
 * the connection folds that log into the file, as the next server would. Answers null when there is
 * no store file, no such identity, or no bun:sqlite (the Node build, which has no sqlite store).
 * Throws when the file is there and cannot be read: whether the run_id was used is then unknown.
 */
export function storedRunIdentity(path: string, runId: string): RunIdentity | null {
  return readIdentities(path, (db) => db.query<RunIdentity, [string]>("SELECT run_id, execution_id, capability, input_hash FROM run_identities WHERE run_id = ?").get(runId)) ?? null;
}

/**
 * The run identities the checkout's store file holds, at most `limit`: read by a
 * server with the memory store as it starts (serve.ts), which holds the checkout's lock, so that a
 * run_id a sqlite server took before it is that run there too. Empty, and throws, as above.
 */
export function storedRunIdentities(path: string, limit: number): RunIdentity[] {
  return readIdentities(path, (db) => db.query<RunIdentity, [number]>("SELECT run_id, execution_id, capability, input_hash FROM run_identities LIMIT ?").all(limit)) ?? [];
}

/** `read` of the store file's identities; undefined when there is no file, no table or no bun:sqlite. */
function readIdentities<T>(path: string, read: (db: Database) => T): T | undefined {
  if (!existsSync(path)) return undefined;
  // SQLite answers only "disk I/O error" of a named pipe or a socket there (or at the end of a
  // link there): said as what it is.
  const stat = statSync(path);
  if (!stat.isFile()) throw new Error(`${path} is ${stat.isFIFO() ? "a named pipe (FIFO)" : stat.isSocket() ? "a socket" : stat.isDirectory() ? "a folder" : "not a regular file"}, not docket's store file; remove it`);
  let sqlite: typeof import("bun:sqlite");
  try {
    sqlite = require("bun:sqlite") as typeof import("bun:sqlite");
  } catch {
    return undefined;
  }
  let db: Database | null = null;
  try {
    db = new sqlite.Database(path, { readwrite: true, create: false, strict: true });
    db.run("PRAGMA locking_mode = EXCLUSIVE");
    db.run("PRAGMA busy_timeout = 0");
    const table = db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'run_identities'").get();
    // A file with no identities yet (or not docket's: the server refuses those itself) holds none.
    if (table === null) return undefined;
    return read(db);
  } finally {
    db?.close(false);
  }
}

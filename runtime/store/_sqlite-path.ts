// SQLite opens no file whose path is longer than its unix limit (512 bytes, of which its journal's
// name takes "-journal"): a checkout some 490 characters deep failed to serve with "unable to open
// database file", read as a permission or disk problem (distribution tester, session 41).

/** The longest path, in bytes, of a file SQLite opens here, measured: 512 less "-journal". */
export const SQLITE_PATH_MAX_BYTES = 504;

/** Why SQLite cannot open `path` for its length, with what to do; null when it can. */
export function sqlitePathTooLong(path: string): string | null {
  const bytes = Buffer.byteLength(path);
  if (bytes <= SQLITE_PATH_MAX_BYTES) return null;
  return `its path is ${bytes} bytes long, and SQLite, which docket keeps it with, opens files of paths of at most ${SQLITE_PATH_MAX_BYTES} bytes. Move the checkout to a shorter path (${bytes - SQLITE_PATH_MAX_BYTES} ${bytes - SQLITE_PATH_MAX_BYTES === 1 ? "byte" : "bytes"} shorter at least)`;
}

import { closeSync, existsSync, fchmodSync, fstatSync, ftruncateSync, openSync, readFileSync, writeSync } from "node:fs";

/**
 * The handlers handed to a worker whose `execution.started` may not be committed yet
 * (docs/durability.md, "Handlers start after their record"): one execution id a line, in
 * `<database>-starting`, appended before the handler is posted and emptied by the next write that
 * commits them all. A handler never waits for a write to begin, and a crash in between can still
 * be told apart from an execution that never started: the next open ends those as interrupted.
 *
 * A line is one `write` to a file opened for appending: the kernel has it once the call returns,
 * so it outlives the process however it dies — the promise the store's commits make too
 * (`synchronous = NORMAL`: against crashes of docket, not of the machine).
 */
export interface StartingJournal {
  /** Notes that `id`'s handler begins; false when the line could not be written. */
  note(id: string): boolean;
  /** After a write that committed everything pending: the lines so far are settled. */
  settled(): void;
  /** The ids the file held when it was opened (what the last process left). */
  readonly left: ReadonlySet<string>;
  close(): void;
}

/** Opens (creates, private) the journal beside the database at `databasePath`. */
export function openStartingJournal(databasePath: string): StartingJournal {
  const path = `${databasePath}-starting`;
  const left = new Set(existsSync(path) ? readFileSync(path, "utf8").split("\n").filter((line) => line !== "") : []);
  const fd = openSync(path, "a", 0o600);
  // Private like the database (one left wider by hand is narrowed, as the database is).
  if ((fstatSync(fd).mode & 0o077) !== 0) fchmodSync(fd, 0o600);
  let lines = left.size;
  let open = true;
  return {
    left,
    note(id) {
      if (!open) return false;
      try {
        writeSync(fd, `${id}\n`);
        lines++;
        return true;
      } catch {
        return false;
      }
    },
    settled() {
      if (!open || lines === 0) return;
      try {
        ftruncateSync(fd, 0);
        lines = 0;
      } catch {
        // Kept: a line whose execution is committed as started is ignored on open anyway.
      }
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}

import { closeSync, constants, fchmodSync, fstatSync, ftruncateSync, openSync, readSync, statSync, writeSync } from "node:fs";

/**
 * The handlers handed to a worker whose `execution.started` may not be committed yet
 * (docs/durability.md, "A start is noted before the handler begins"): one execution id a line, in
 * `<database>-starting`, appended before the handler is posted. A handler never waits for a write
 * to begin, and a crash in between can still be told apart from an execution that never started:
 * the next open ends those as interrupted.
 *
 * A line is one `write` to a file opened for appending: the kernel has it once the call returns,
 * so it outlives the process however it dies — the promise the store's commits make too
 * (`synchronous = NORMAL`: against crashes of docket, not of the machine). A line not written
 * whole (a full disk) is a note not taken: the caller holds the handler, and the next note ends
 * the fragment first.
 *
 * A line whose execution is committed as started means nothing any more (the open only looks at
 * executions it finds `queued`), so the file is emptied only now and then: after a write that
 * committed everything pending, once it holds SETTLE_LINES — a truncation per write measured as
 * much as the note itself.
 *
 * The file removed or replaced under the server (by hand, a cleaning tool) would take the notes
 * that follow with it: after each such write (one `fstat` and one `stat`), it is made again at its
 * path, empty, since nothing before that write means anything any more. Made again it cannot be
 * (its folder gone, a link put there): no start is noted, and so none begins, until it can.
 */
export interface StartingJournal {
  /** Notes that `id`'s handler begins; false when the whole line could not be written. */
  note(id: string): boolean;
  /** Whether a note can be written now: ends a fragment, or writes an empty line (skipped on open). */
  writable(): boolean;
  /** After a write that committed everything pending: the lines so far mean nothing any more. */
  settled(): void;
  /** Empties the file now (after the open's recovery committed). */
  empty(): void;
  /** The ids of the file's whole lines for which `keep` is true (what the last process left). */
  left(keep: (id: string) => boolean): Set<string>;
  close(): void;
}

/** Lines the file holds before a settled write empties it. */
export const SETTLE_LINES = 4096;
const READ_CHUNK = 1024 * 1024;
/** Longer lines are no execution id (the file was written by something else): skipped. */
const MAX_LINE = 256;

/** How a line reaches the file: `writeSync` (tests give one that fails, or writes in part). */
export type WriteLine = (fd: number, text: string) => number;

/** Opens (creates, private; never through a symbolic link) the journal beside the database at `databasePath`. */
export function openStartingJournal(databasePath: string, write: WriteLine = writeSync): StartingJournal {
  const path = `${databasePath}-starting`;
  const openAt = (): number => {
    const opened = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
    try {
      const stats = fstatSync(opened);
      if (!stats.isFile()) throw new Error(`${path} is not a file`);
      // Private like the database (one left wider by hand is narrowed, as the database is).
      if ((stats.mode & 0o077) !== 0) fchmodSync(opened, 0o600);
    } catch (error) {
      closeSync(opened);
      throw error;
    }
    return opened;
  };
  let fd = openAt();
  let lines = 0;
  // A line written in part: the next note ends it first.
  let broken = false;
  let open = true;
  // The file was removed or replaced and could not be made again: no note is taken until it is.
  let lost = false;
  /** Whether `fd` is no longer the file at `path` (unlinked, or another file put there). */
  const moved = (): boolean => {
    try {
      const held = fstatSync(fd);
      if (held.nlink === 0) return true;
      const named = statSync(path, { throwIfNoEntry: false });
      return named === undefined || named.ino !== held.ino || named.dev !== held.dev;
    } catch {
      return false;
    }
  };
  /** After a write that committed every note: the file at `path` again, empty. */
  const remake = () => {
    try {
      const next = openAt();
      ftruncateSync(next, 0);
      closeSync(fd);
      fd = next;
      lines = 0;
      broken = false;
      lost = false;
    } catch {
      lost = true;
    }
  };
  /** Writes one newline; true when it was written. */
  const newline = (): boolean => {
    try {
      if (write(fd, "\n") !== 1) return false;
    } catch {
      return false;
    }
    broken = false;
    return true;
  };
  const truncate = () => {
    try {
      ftruncateSync(fd, 0);
      lines = 0;
      broken = false;
    } catch {
      // Kept as it is: the next settled write tries again.
    }
  };
  return {
    note(id) {
      // A fragment ends as a line of its own, which matches no id (every id is as long): the
      // earlier lines stay, since their starts may not be committed yet.
      // Lost, no note was taken since the write that committed every earlier one: made again now, it is empty rightly.
      if (lost) remake();
      if (!open || lost || (broken && !newline())) return false;
      const line = `${id}\n`;
      try {
        const written = write(fd, line);
        if (written !== Buffer.byteLength(line)) {
          broken = true;
          return false;
        }
      } catch {
        // Nothing was written (write(2) writes some bytes or fails): the file is as it was.
        return false;
      }
      lines++;
      return true;
    },
    writable() {
      if (open && lost) remake();
      return open && !lost && newline();
    },
    settled() {
      if (!open) return;
      if (lost || moved()) remake();
      else if (broken || lines >= SETTLE_LINES) truncate();
    },
    empty() {
      if (open) truncate();
    },
    left(keep) {
      const found = new Set<string>();
      const buffer = Buffer.alloc(READ_CHUNK);
      let carry = "";
      // Inside a line too long to be an execution id: skipped to its end.
      let skipping = false;
      for (let position = 0; ; ) {
        const read = readSync(fd, buffer, 0, READ_CHUNK, position);
        if (read === 0) break;
        position += read;
        let text = buffer.toString("latin1", 0, read);
        if (skipping) {
          const next = text.indexOf("\n");
          if (next < 0) continue;
          text = text.slice(next + 1);
          skipping = false;
        } else text = carry + text;
        const end = text.lastIndexOf("\n");
        carry = text.slice(end + 1);
        if (carry.length > MAX_LINE) [carry, skipping] = ["", true];
        for (const id of text.slice(0, Math.max(0, end)).split("\n")) if (id !== "" && id.length <= MAX_LINE && keep(id)) found.add(id);
      }
      return found;
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}

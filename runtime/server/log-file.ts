import { chmodSync, closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";

/** Options of {@link openLogFile}. */
export interface LogFileOptions {
  /** The folder of the files (`<root>/.docket/logs`); created 0700 when missing. */
  dir: string;
  /** Files kept in all, the one written included (`server.log`, `server.log.1`, …); at least 1. */
  files: number;
  /** Bytes of one file before it is rotated; a longer line is cut to fit. */
  fileBytes: number;
  /** Stamps each line; default the wall clock. */
  now?: () => Date;
  /** Told once per run of failed writes (a full disk, a removed folder); the caller's stderr. */
  onError?: (message: string) => void;
}

/** The server's log file: what it writes to stderr, kept and rotated (docs/logging.md). */
export interface LogFile {
  /** The file written now. */
  readonly path: string;
  /** Appends one line (a timestamp before it); never throws. */
  write(line: string): void;
  close(): void;
}

/** The name of the file written now; older ones carry `.1`, `.2`, … (the highest is the oldest). */
export const LOG_FILE_NAME = "server.log";

/**
 * Opens (or creates) `<dir>/server.log` for appending, 0600 in a 0700 folder. Writes are
 * synchronous: a log line is small and rare, and a line written before a crash is the one that
 * explains it. Once the file would pass `fileBytes` it is rotated: `server.log` becomes
 * `server.log.1`, `.1` becomes `.2`, and so on, the oldest beyond `files` deleted. A write that
 * fails is reported once and tried again with the next line, so the log recovers by itself when
 * space returns; the server never stops for its log.
 */
export function openLogFile(options: LogFileOptions): LogFile {
  const { dir } = options;
  const files = Math.max(1, Math.floor(options.files));
  const fileBytes = Math.max(64, Math.floor(options.fileBytes));
  const now = options.now ?? (() => new Date());
  const path = join(dir, LOG_FILE_NAME);
  const rotated = (n: number) => (n === 0 ? path : `${path}.${n}`);
  let fd: number | null = null;
  let size = 0;
  let failing = false;
  let closed = false;

  function open(): number {
    // Nor through a link where its parent was (.docket/ removed and a link put there): made again
    // through it, the folder and the log landed outside the checkout (checking tester, session 44).
    if (lstatSync(dirname(dir), { throwIfNoEntry: false })?.isSymbolicLink()) throw new Error(`${dirname(dir)} is a symbolic link; docket writes nothing through it`);
    // Its folder and the one above (.docket/ removed under the server) are made again, never the
    // checkout's own: one moved or deleted is not made again at its old path (checking tester, session 50).
    for (const folder of [dirname(dir), dir]) {
      try {
        mkdirSync(folder, { mode: 0o700 });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
    }
    // The log is written where docket put it, never through a link planted in its place.
    if (lstatSync(dir).isSymbolicLink()) throw new Error(`${dir} is a symbolic link; remove it and docket makes the folder again`);
    // A folder made by an older docket (or by hand) is narrowed too: the log names executions and paths.
    chmodSync(dir, 0o700);
    // Nor into a named pipe put there: opened for writing, one with no reader waited in open() for
    // good, and held the server's thread (serve tester, session 50). O_NONBLOCK changes nothing for a file.
    const opened = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0), 0o600);
    const stat = fstatSync(opened);
    if (!stat.isFile()) {
      closeSync(opened);
      throw new Error(`${path} is not a regular file (a named pipe, a socket?); remove it and docket makes its log again`);
    }
    fchmodSync(opened, 0o600);
    size = stat.size;
    return opened;
  }

  function rotate(): void {
    if (fd !== null) closeSync(fd);
    fd = null;
    rmSync(rotated(files - 1), { force: true });
    for (let n = files - 2; n >= 0; n--) {
      try {
        renameSync(rotated(n), rotated(n + 1));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
    }
  }

  function write(line: string): void {
    if (closed) return;
    let text = `${now().toISOString()} ${line}\n`;
    let bytes = Buffer.byteLength(text);
    if (bytes > fileBytes) {
      text = `${Buffer.from(text).subarray(0, fileBytes - 16).toString("utf8").replace(/\uFFFD$/, "")} …(cut)\n`;
      bytes = Buffer.byteLength(text);
    }
    try {
      // A file removed under the server (.docket/ deleted) is written no more: the lines would go
      // to a file no one can open. The folder and the file are made again.
      if (fd !== null && fstatSync(fd).nlink === 0) {
        closeSync(fd);
        fd = null;
      }
      fd ??= open();
      if (size > 0 && size + bytes > fileBytes) {
        rotate();
        fd = open();
      }
      writeSync(fd, text);
      size += bytes;
      failing = false;
    } catch (error) {
      // The next line tries again from a fresh open: the folder may have been removed, the disk freed.
      if (fd !== null) {
        try {
          closeSync(fd);
        } catch {
          // Already unusable.
        }
      }
      fd = null;
      if (!failing) options.onError?.(`docket could not write its log file ${path} (${(error as Error)?.message ?? error}); it goes on logging to stderr and tries again with the next line`);
      failing = true;
    }
  }

  return {
    path,
    write,
    close() {
      if (closed) return;
      closed = true;
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}

/** A log that writes each line to `stderr` (as before) and to the file. */
export function teeLog(stderr: (line: string) => void, file: LogFile): (line: string) => void {
  return (line) => {
    stderr(line);
    file.write(line);
  };
}

import { statSync, type Stats } from "node:fs";

/**
 * Whether the store's files are still the ones it opened: a checkout cleaned under a running
 * server (`git clean -fdX`, `rm -rf .docket`) unlinks them, and SQLite then writes on to files no
 * path names, which a restart never finds — so an answer acknowledged after that would be lost.
 * Three cases, each noticed at the next write (docs/durability.md, "One server per checkout"):
 *
 * - the database removed or replaced by another file;
 * - the database cut shorter in place (`truncate`, `: > state.db`): the store never makes it
 *   smaller (it does not vacuum), so a file shorter than it was is one someone else emptied;
 * - the write-ahead log (`<db>-wal`) removed or replaced: commits go on into a log no path names,
 *   and a crash loses everything since the last checkpoint. A server stopped cleanly copies that
 *   log into the database first, so the message says to stop it that way;
 * - the log cut shorter in place than the store's own last commit or checkpoint left it, and
 *   below its own bound (`truncate -s 0 state.db-wal`): the frames it held are gone, and SQLite, writing on at its
 *   offsets, leaves a log no restart reads. Copied into the database (a checkpoint, the clean
 *   stop's), its missing frames would be pages of zeros: `logCut()` says so, and the store then
 *   neither checkpoints nor copies it at close (durability tester, session 49).
 *
 * `changed()` answers why the files are not the ones opened (a write then fails as a storage
 * fault: nothing more is acknowledged), or null: two stats per write of the store. `settled()`,
 * after each commit and checkpoint of the store's own, notes the size it left the file at: a
 * file cut shorter than that later is noticed at the next write, however much it had grown.
 */
export function storeFileIdentity(path: string, logLimit: () => number = () => Number.POSITIVE_INFINITY): { changed: () => string | null; settled: () => void; logCut: () => boolean } {
  const opened = statSync(path);
  let largest = opened.size;
  const logPath = `${path}-wal`;
  // In WAL mode the log exists from the open on, and stays (emptied, not removed) while the store runs.
  let log = statOrNull(logPath) ?? null;
  /** The log's size as the store's own last commit or checkpoint left it (which may start it over, or cut it to its limit). */
  let logSize = log?.size ?? 0;
  let cut = false;
  /** After a commit or checkpoint of the store's own (which may grow the file): its size from then on is the least it may have. */
  const settled = () => {
    const now = statOrNull(path);
    if (now && sameFile(now, opened) && now.size > largest) largest = now.size;
    const nowLog = statOrNull(logPath);
    if (nowLog && log !== null && sameFile(nowLog, log) && !cut) logSize = nowLog.size;
  };
  const changed = () => {
    const now = statOrNull(path);
    if (now === undefined) return null;
    if (now === null || !sameFile(now, opened)) {
      return `${path} was ${now === null ? "removed" : "replaced by another file"} while this server ran (a git clean -fdX, .docket/ deleted, or the checkout moved?): what the store writes now could never be read again, so it admits nothing new. Restart docket serve: it starts a new store there (the executions this one held are lost with the file; if the checkout was moved, a docket serve in its new place recovers them from the file that moved with it)`;
    }
    if (now.size < largest) {
      return `${path} was cut from ${largest} to ${now.size} bytes while this server ran (emptied or truncated by something else: the store never makes it smaller): what it held is damaged, so the store admits nothing new. Stop docket serve, put back a copy of the file if there is one (or move it aside to start a new store), and start it again`;
    }
    const nowLog = statOrNull(logPath);
    if (nowLog === undefined) return null;
    if (log === null) {
      log = nowLog;
      return null;
    }
    if (nowLog === null || !sameFile(nowLog, log)) {
      return `${logPath}, the store's write-ahead log, was ${nowLog === null ? "removed" : "replaced by another file"} while this server ran: what the store commits now goes to a log no restart would read, and a crash would lose it, so it admits nothing new. Stop docket serve cleanly (Ctrl-C or SIGTERM: it copies the log it still holds into ${path} first, and nothing acknowledged is lost) and start it again`;
    }
    // Below the log's own bound (`journal_size_limit`, logLimit) too: SQLite itself cuts the log
    // back to that bound when it starts it over, in any write of the store's (an expiry pass
    // among them), which a healthy server then reported as cut (checking tester, session 49).
    if (cut || (nowLog.size < logSize && nowLog.size < logLimit())) {
      cut = true;
      return `${logPath}, the store's write-ahead log, was cut from ${logSize} to ${nowLog.size} bytes while this server ran (emptied or truncated in place by something else): the executions it committed since its last checkpoint are gone from the disk, so it admits nothing new, and it will not copy that log into ${path} (its missing part would damage the file). Stop docket serve and start it again: it opens ${path} as its last checkpoint left it`;
    }
    return null;
  };
  return { changed, settled, logCut: () => cut };
}

/** The file's stat; null when there is none at `path`; undefined when it cannot be looked at (a permission, an I/O error): not a reason to refuse writes. */
function statOrNull(path: string): Stats | null | undefined {
  try {
    return statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR" ? null : undefined;
  }
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.ino === b.ino && a.dev === b.dev;
}

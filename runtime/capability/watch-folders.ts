import { existsSync, statSync, watch as watchPath, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";
import { systemClock, type Clock } from "../execution/clock.ts";
import { lookAtPaths, looksDiffer, type PathLook } from "./path-looks.ts";

/** Options of {@link watchFolders}. */
export interface WatchFoldersOptions {
  /** Quiet time after the last change before `onChange` runs: an editor's save is several events. */
  debounceMs?: number;
  /** The longest `onChange` waits after the first change of a burst that never goes quiet. */
  maxWaitMs?: number;
  clock?: Pick<Clock, "setTimeout" | "clearTimeout">;
  /** A folder that cannot be watched (for the server log); watching the others goes on. */
  onProblem?: (message: string) => void;
  /**
   * How often the folders are also looked at directly, for a change the file system did not report
   * (DEFAULT_POLL_MS); 0: never.
   */
  pollMs?: number;
  /**
   * The folders as they were when their contents were last read (lookAtFolders, taken just before
   * that read): changes count from there, not from the watch's start. A file saved in between (a
   * `capabilities/` made the moment `docket serve` printed its address) was never loaded otherwise.
   */
  lookedAt?: PathLook[];
  /** The file system's change events (node:fs `watch`); a test gives one that never reports, as a network mount does. */
  watch?: (path: string, options: { persistent: boolean }, listener: (event: string, name: string | Buffer | null) => void) => FSWatcher;
}

/** A running watch; `close()` stops it and cancels a pending `onChange`. */
export interface FolderWatch {
  close(): void;
  /** Re-checks which folders exist now and watches each where it can (called after every change). */
  rearm(): void;
  /**
   * Watches one more folder too (a folder of local modules a capability imports); at most MAX_ADDED.
   * `since` (ms since the epoch): when its files were read, by the reload that found it; a file in it
   * changed after that is a change. Without it, how the folder is at its first look is its start.
   */
  add(folder: string, since?: number): void;
  /** Counts as a change: `onChange` runs once the folders have been quiet for the debounce time. */
  touch(): void;
  /**
   * True while a change waits for its `onChange`: the folders are not quiet (a reload reading them
   * may have read mid-save). Asked once a reload has read them: where the file system may not have
   * reported a change, the folders are looked at to tell (a change found so is then waiting).
   */
  pending(): boolean;
}

/** How many folders `add` watches beyond the given ones: each is one watcher. */
export const MAX_ADDED = 256;

/** Long enough to gather an editor's write-rename-chmod burst, short enough to stay well under a second. */
export const DEFAULT_DEBOUNCE_MS = 150;
/**
 * A folder that is never quiet (a build stamp rewritten every 100 ms beside a helper) would
 * otherwise hold every reload back for as long as it is written: changes are picked up at most
 * this long after the first one, quiet or not.
 */
export const DEFAULT_MAX_WAIT_MS = 500;
/**
 * The file system does not always report a change: a folder mounted from elsewhere (WSL's /mnt/c
 * edited from Windows, a network share, some container mounts) reports none, and a queue that
 * overflows loses some. The folders are looked at this often as well, so a change is reloaded
 * within this long however it was missed.
 */
export const DEFAULT_POLL_MS = 2000;
/** What one look reads at most, across every watched folder (path-looks.ts): entries, and files looked at one by one. */
export const LOOK_BUDGET = { entries: 5000, stats: 1000 };
/**
 * A look runs on the main thread, which serves every client: the next poll waits at least this many
 * times as long as a look takes (a typical checkout's takes under 1 ms; 256 folders of helpers,
 * 10–20 ms on a slow VM), so polling never takes more than 1 % of it. What a look takes is the
 * fastest of the last LOOK_COSTS_KEPT: one look slowed by a busy machine does not space the polls out.
 */
const LOOK_COST_FACTOR = 100;
const LOOK_COSTS_KEPT = 5;
/**
 * A file's times are as coarse as its file system keeps them (2 s on FAT, 1 s on some network
 * shares) and the kernel's clock for them runs a few ms behind: a file changed this long before
 * a folder was read counts as changed after. The cost is one more reload that finds nothing new.
 */
export const FILE_TIME_SLACK_MS = 2000;

/** A look at these folders now, as watchFolders takes one: the `lookedAt` of a watch that starts later. */
export function lookAtFolders(folders: readonly string[]): PathLook[] {
  return lookAtPaths(folders, LOOK_BUDGET, folders.length);
}

/**
 * Calls `onChange` once the capability folders have been quiet for `debounceMs` after any change
 * in them, or `maxWaitMs` after the first change of a burst that goes on (docs/authoring.md, "Live reload"):
 * `quiet` says which (a reload forced by a burst may read a file mid-save). Every event counts, whatever its file name: on Linux
 * an atomic save may name only the temporary file, and a spurious reload costs a folder read, since
 * unchanged files are not imported again. A folder that does not exist (yet) is watched through its
 * parent, so creating `capabilities/` is seen too; a watched folder that is removed, or replaced
 * (re-created, renamed over, a link re-pointed), is watched again at its next change. Folders are
 * not descended into, as discovery does not.
 *
 * Every `pollMs` the folders are also looked at and compared with the look before, and a
 * difference counts as a change: one the file system did not report is reloaded all the same. With
 * no event to say that such a change goes on (a slow save), the folders are looked at again when the
 * quiet time ends, and a difference since is more change: the quiet time starts over.
 */
export function watchFolders(folders: string[], onChange: (quiet: boolean) => void, options: WatchFoldersOptions = {}): FolderWatch {
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const maxWaitMs = Math.max(debounceMs, options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
  const clock = options.clock ?? systemClock;
  const watch = options.watch ?? watchPath;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  // Each watched folder's watcher, the path it watches (itself, or its parent while it is missing) and which folder that path was then.
  const watchers = new Map<string, { target: string; identity: string; watcher: FSWatcher }>();
  // Paths the file system refused to watch, said once each.
  const refused = new Set<string>();
  // The quiet-time timer, moved on by every change; and the burst's deadline, set by its first.
  let timer: unknown = null;
  let deadline: unknown = null;
  let closed = false;
  // Folders an event came for since the last onChange: the file system reports their changes, and
  // says when those go on. Only the others need a look to tell.
  const eventFor = new Set<string>();
  // The folders' last look (one per folder, in order). A folder added since has none yet: its next
  // look is where its changes count from, and a file changed after `since` in it is a change.
  let seen: Array<PathLook | { since: number }> = [];
  const lookCosts: number[] = [];
  let poll: unknown = null;

  /** A look at every folder now, the capability folders (the `given` first ones) served first. */
  const look = (): PathLook[] => {
    // What it cost is the main thread's own time, whatever the clock.
    const began = performance.now();
    const now = lookAtPaths(folders, LOOK_BUDGET, given);
    lookCosts.push(performance.now() - began);
    if (lookCosts.length > LOOK_COSTS_KEPT) lookCosts.shift();
    return now;
  };
  /** Whether a folder looks different now than at the last look; `unheard`: only among those no event came for. */
  const differsFromSeen = (now: PathLook[], unheard = false) =>
    now.some((after, i) => {
      const before = seen[i];
      if (before === undefined || (unheard && eventFor.has(folders[i]!))) return false;
      return "since" in before ? after.newest >= before.since : looksDiffer(before, after);
    });

  const fire = (quiet: boolean) => {
    if (closed) return;
    // Looked at before every reload, whatever it costs beside polling: the reload reads them all anyway.
    const now = pollMs > 0 ? look() : null;
    if (now !== null) {
      // Still changing where no event says so (a slow save in a folder that sends none): wait for quiet again.
      const more = quiet && differsFromSeen(now, true);
      seen = now;
      if (more) {
        timer = clock.setTimeout(() => fire(true), debounceMs);
        return;
      }
    }
    if (timer !== null) clock.clearTimeout(timer);
    if (deadline !== null) clock.clearTimeout(deadline);
    timer = deadline = null;
    eventFor.clear();
    rearm();
    onChange(quiet);
  };

  /** Looks at the folders; a difference from the last look is a change, and true. */
  const lookForChange = (): boolean => {
    const now = look();
    const differs = differsFromSeen(now);
    seen = now;
    if (differs) changed();
    return differs;
  };

  const pollOnce = () => {
    poll = null;
    if (closed) return;
    // A change already waits for its onChange, which looks at the folders itself.
    if (timer === null) lookForChange();
    armPoll();
  };
  /** The next poll in `ms`, or after the poll period (longer for a look that costs much). */
  const armPoll = (ms?: number) => {
    if (closed || pollMs <= 0) return;
    if (poll !== null) clock.clearTimeout(poll);
    poll = clock.setTimeout(pollOnce, ms ?? Math.max(pollMs, LOOK_COST_FACTOR * (lookCosts.length > 0 ? Math.min(...lookCosts) : 0)));
    // Like the watchers (persistent: false), the poll never keeps the process alive.
    (poll as { unref?: () => void } | null)?.unref?.();
  };

  const changed = () => {
    if (closed) return;
    if (timer !== null) clock.clearTimeout(timer);
    timer = clock.setTimeout(() => fire(true), debounceMs);
    deadline ??= clock.setTimeout(() => fire(false), maxWaitMs);
  };
  const eventCame = (folder: string) => {
    eventFor.add(folder);
    changed();
  };

  /** Which folder a path is now: its inode, and its birth time (a folder re-created at once may get the old one's inode); null when absent. */
  const identityOf = (path: string): string | null => {
    try {
      const stat = statSync(path, { throwIfNoEntry: false });
      return stat === undefined ? null : `${stat.ino}:${stat.birthtimeMs}`;
    } catch {
      return null;
    }
  };

  const watchOne = (folder: string) => {
    // The folder itself when it exists, else its parent for the folder's own name only.
    const target = existsSync(folder) ? folder : dirname(folder);
    const identity = identityOf(target);
    const current = watchers.get(folder);
    // The same path, and still the same folder: a folder re-created, renamed over or re-pointed
    // by a link is another one, and a watcher of the old one hears nothing of it.
    if (current?.target === target && current.identity === identity) return;
    current?.watcher.close();
    watchers.delete(folder);
    if (identity === null) return;
    try {
      const own = target === folder;
      const watcher = watch(target, { persistent: false }, (_event, name) => {
        if (own || name === null || name === undefined || String(name) === basename(folder)) eventCame(folder);
      });
      watcher.on("error", () => {
        // The folder went away under the watcher: watch it through its parent again.
        watcher.close();
        if (watchers.get(folder)?.watcher === watcher) watchers.delete(folder);
        eventCame(folder);
      });
      watchers.set(folder, { target, identity, watcher });
      refused.delete(target);
    } catch (error) {
      if (refused.has(target)) return;
      refused.add(target);
      const instead = pollMs > 0 ? `it looks at it every ${pollMs / 1000} s instead, so an edit there is picked up within that` : "restart docket serve (or docket mcp) to pick up edits there";
      options.onProblem?.(`docket cannot watch ${target} for changes (${(error as Error).message}); ${instead}.`);
    }
  };

  function rearm(): void {
    if (closed) return;
    for (const folder of folders) watchOne(folder);
  }

  rearm();
  const given = folders.length;
  folders = [...folders];
  if (options.lookedAt?.length === given) {
    // Changed since the read the caller holds: a change now, reloaded after the quiet time.
    seen = options.lookedAt;
    lookForChange();
  } else if (pollMs > 0) seen = look();
  armPoll();
  return {
    rearm,
    add(folder, since) {
      if (closed || folders.includes(folder) || folders.length - given >= MAX_ADDED) return;
      folders.push(folder);
      watchOne(folder);
      // Looked at soon, with the others (a reload adds them together). A file saved between the
      // reload's read and now sent no event to a watcher made only now: only its time tells.
      if (pollMs <= 0) return;
      seen.push({ since: since === undefined ? Infinity : since - FILE_TIME_SLACK_MS });
      armPoll(0);
    },
    touch: changed,
    pending() {
      if (timer !== null) return true;
      if (closed || pollMs <= 0) return false;
      // A change made while the reload read, in a folder that sends no event, shows only to a look.
      return lookForChange();
    },
    close() {
      closed = true;
      if (timer !== null) clock.clearTimeout(timer);
      if (deadline !== null) clock.clearTimeout(deadline);
      if (poll !== null) clock.clearTimeout(poll);
      for (const { watcher } of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}

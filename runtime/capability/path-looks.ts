import { opendirSync, statSync, type Dirent, type Stats } from "node:fs";
import { join } from "node:path";

/**
 * What each watched path looks like now, such that two looks differ (`looksDiffer`) when a file in
 * it was created, removed, renamed or written between them: the path's own identity, modification
 * and change times, the names of a folder's entries, and the identity, size, modification and
 * change times of each file among them (the change time moves with a `chmod` and with a copy that
 * kept the old modification time, `cp -p`). Folders are not descended into, as discovery does not.
 * The live reload's poll compares them to catch a change the file system never reported
 * (docs/authoring.md, "Live reload"); a path's first look tells by its `newest` time whether it
 * changed since a given moment.
 *
 * A look runs on the main thread, so what it reads is bounded:
 * - `budget.entries`: the entries read across all the paths. A folder holding more than
 *   MAX_FOLDER_ENTRIES, or more than is left, or whose own size says it may (LARGE_FOLDER_BYTES:
 *   a folder is read whole to know), is looked at as one whole: its own times still move when a
 *   file in it is created, removed or renamed, not when one is written in place.
 * - `budget.stats`: the files looked at one by one (one system call each). The first `first` paths
 *   (the capability folders) are served first, whole, in order; what is left is shared out among
 *   the others so that a large folder does not leave them none: each one's files are looked at
 *   whole if it holds no more than its share, and a folder's unused share goes to the larger ones.
 */
export function lookAtPaths(paths: readonly string[], budget: { entries: number; stats: number }, first = 0): PathLook[] {
  let entriesLeft = budget.entries;
  const read = paths.map((path) => {
    const found = readPath(path, Math.min(MAX_FOLDER_ENTRIES, entriesLeft));
    entriesLeft -= found.read;
    return found;
  });
  let statsLeft = budget.stats;
  const served = read.slice(0, first).map((path) => {
    const share = Math.min(path.files.length, statsLeft);
    statsLeft -= share;
    return share;
  });
  const shares = [
    ...served,
    ...shareOut(
      read.slice(first).map((path) => path.files.length),
      statsLeft,
    ),
  ];
  return read.map((path, i) => {
    const files = statFiles(paths[i]!, path.files.slice(0, shares[i]!));
    return { head: path.head, names: path.names.join("\0"), files: files.looks, newest: Math.max(path.newest, files.newest) };
  });
}

/** The most entries of one folder read one by one; past it the folder is looked at as one whole. */
export const MAX_FOLDER_ENTRIES = 1000;
/**
 * A folder this large on disk is not read (reading 100,000 entries takes some 50 ms, however few
 * are kept): ext4 takes about 24 bytes an entry, tmpfs 20, so this is some 2,700 entries or more,
 * or as many once (an ext4 folder does not shrink).
 */
export const LARGE_FOLDER_BYTES = 64 * 1024;

/** One path's look. */
export interface PathLook {
  head: string;
  /** Its entries' names, NUL-separated (no file name holds a NUL). */
  names: string;
  /** Identity, size and times of the files looked at one by one, by name. */
  files: Map<string, string>;
  /** The latest modification or change time (ms since the epoch) of the path itself and of the files looked at one by one; 0 when none. */
  newest: number;
}

/**
 * Whether a path changed between two looks: its own stat or its entries' names, or a file looked at
 * both times. A file looked at only once (the shares moved as folders were added or grew) is no change.
 */
export function looksDiffer(before: PathLook, after: PathLook): boolean {
  if (before.head !== after.head || before.names !== after.names) return true;
  for (const [name, stat] of after.files) {
    const was = before.files.get(name);
    if (was !== undefined && was !== stat) return true;
  }
  return false;
}

interface ReadPath {
  /** The path's own kind and stat; "-" when absent, "?" when unreadable. */
  head: string;
  /** A folder's entries that are not folders (files, links), by name, in order. */
  files: string[];
  /** Every entry's name, in order. */
  names: string[];
  /** How many entries were read. */
  read: number;
  /** The path's own latest modification or change time (ms), 0 when absent or unreadable. */
  newest: number;
}

const statText = (stat: Stats) => `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
const newestOf = (stat: Stats) => Math.max(stat.mtimeMs, stat.ctimeMs);

function readPath(path: string, allowed: number): ReadPath {
  const none = (head: string, read = 0, newest = 0): ReadPath => ({ head, files: [], names: [], read, newest });
  let own;
  try {
    own = statSync(path, { throwIfNoEntry: false });
  } catch {
    // Unreadable (permission, a loop of links): seen as such until it changes.
    return none("?");
  }
  if (own === undefined) return none("-");
  const head = `${own.isDirectory() ? "d" : "f"}:${statText(own)}`;
  const newest = newestOf(own);
  if (!own.isDirectory()) return none(head, 0, newest);
  // Not opened at all: Bun's opendirSync reads a whole folder however few entries are taken.
  if (own.size > LARGE_FOLDER_BYTES || allowed === 0) return none(`${head}:large`, 0, newest);
  const entries: Dirent[] = [];
  try {
    const folder = opendirSync(path);
    try {
      for (let entry = folder.readSync(); entry !== null; entry = folder.readSync()) {
        // One more than allowed tells that the folder holds too many: it is looked at whole.
        if (entries.length === allowed) return none(`${head}:large`, entries.length, newest);
        entries.push(entry);
      }
    } finally {
      folder.closeSync();
    }
  } catch {
    return none(`${head}:?`, entries.length, newest);
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // A folder's own contents are not read: its name says it is there.
  return { head, files: entries.filter((entry) => !entry.isDirectory()).map((entry) => entry.name), names: entries.map((entry) => entry.name), read: entries.length, newest };
}

/** Up to `budget` looks shared among folders wanting `wants` each: the smaller ones whole first, the rest evenly. */
function shareOut(wants: number[], budget: number): number[] {
  const shares = wants.map(() => 0);
  const order = wants.map((_, i) => i).sort((a, b) => wants[a]! - wants[b]!);
  let left = budget;
  order.forEach((index, k) => {
    const share = Math.min(wants[index]!, Math.floor(left / (order.length - k)));
    shares[index] = share;
    left -= share;
  });
  return shares;
}

function statFiles(folder: string, names: string[]): { looks: Map<string, string>; newest: number } {
  const files = new Map<string, string>();
  let newest = 0;
  for (const name of names) {
    let stat;
    try {
      stat = statSync(join(folder, name), { throwIfNoEntry: false });
    } catch {
      stat = undefined;
    }
    files.set(name, stat === undefined ? "-" : statText(stat));
    if (stat !== undefined) newest = Math.max(newest, newestOf(stat));
  }
  return { looks: files, newest };
}

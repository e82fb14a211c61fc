import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * What each watched path looks like now, such that two looks differ (`looksDiffer`) when a file in
 * it was created, removed, renamed or written between them: the path's own identity and
 * modification time, the names of a folder's entries, and the size and modification time of each
 * file among them. Folders are not descended into, as discovery does not. The live reload's poll
 * compares them to catch a change the file system never reported (docs/authoring.md, "Live reload").
 *
 * `statBudget` bounds the files looked at one by one across all the paths (one system call each,
 * on the main thread), shared out so that a large folder does not leave the others none: each
 * folder's files are looked at whole if it holds no more than its share, and a folder's unused
 * share goes to the larger ones. Past its share, a folder's entry names and its own modification
 * time still show a file created, removed or renamed there, but not one written in place.
 */
export function lookAtPaths(paths: readonly string[], statBudget: number): PathLook[] {
  const read = paths.map(readPath);
  const shares = shareOut(
    read.map((path) => path.files.length),
    statBudget,
  );
  return read.map((path, i) => ({ head: path.head, names: path.names.join("\0"), files: statFiles(paths[i]!, path.files.slice(0, shares[i]!)) }));
}

/** One path's look. */
export interface PathLook {
  head: string;
  /** Its entries' names, NUL-separated (no file name holds a NUL). */
  names: string;
  /** Identity, size and modification time of the files looked at one by one, by name. */
  files: Map<string, string>;
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
  /** The path's own kind, identity, size and modification time; "-" when absent, "?" when unreadable. */
  head: string;
  /** A folder's entries that are not folders (files, links), by name, in order. */
  files: string[];
  /** Every entry's name, in order. */
  names: string[];
}

function readPath(path: string): ReadPath {
  let own;
  try {
    own = statSync(path, { throwIfNoEntry: false });
  } catch {
    // Unreadable (permission, a loop of links): seen as such until it changes.
    return { head: "?", files: [], names: [] };
  }
  if (own === undefined) return { head: "-", files: [], names: [] };
  const head = `${own.isDirectory() ? "d" : "f"}:${own.ino}:${own.size}:${own.mtimeMs}`;
  if (!own.isDirectory()) return { head, files: [], names: [] };
  let entries;
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return { head: `${head}:?`, files: [], names: [] };
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // A folder's own contents are not read: its name says it is there.
  return { head, files: entries.filter((entry) => !entry.isDirectory()).map((entry) => entry.name), names: entries.map((entry) => entry.name) };
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

function statFiles(folder: string, names: string[]): Map<string, string> {
  const files = new Map<string, string>();
  for (const name of names) {
    let stat;
    try {
      stat = statSync(join(folder, name), { throwIfNoEntry: false });
    } catch {
      stat = undefined;
    }
    files.set(name, stat === undefined ? "-" : `${stat.ino}:${stat.size}:${stat.mtimeMs}`);
  }
  return files;
}

import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, rmdirSync, rmSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import type { ArtifactInfo } from "./plane.ts";

/**
 * How the file an artifact is written into begins, in its execution's folder, until it is whole
 * and renamed to its name: never listed, and no artifact may be named so (docs/handler-api.md).
 */
export const PARTIAL_ARTIFACT_PREFIX = ".docket-partial-";

/** The artifact names of a folder's entries: what a write in progress (or cut short by a crash) left is not one. */
const isArtifactName = (name: string) => !name.startsWith(PARTIAL_ARTIFACT_PREFIX);

/** The managed output folder of one execution (docs/handler-api.md). */
export function artifactsDir(root: string, id: string): string {
  return join(root, ".docket", "artifacts", id);
}

/**
 * The execution's artifact folder when it and every folder on the way to it is a real folder, not
 * a link (a handler can swap one in: `ln -s /etc .docket/artifacts/<id>` listed all of /etc with
 * hashes); null otherwise. Downloads check the same (artifact-download.ts).
 */
export function ownFolder(root: string, id: string): string | null {
  const dir = artifactsDir(root, id);
  return ownArtifactsRoot(root) && isRealFolder(dir) ? dir : null;
}

/** `.docket/` and `.docket/artifacts/` are real folders of the checkout, not links. */
function ownArtifactsRoot(root: string): boolean {
  return isRealFolder(join(root, ".docket")) && isRealFolder(join(root, ".docket", "artifacts"));
}

const isRealFolder = (path: string) => lstatSync(path, { throwIfNoEntry: false })?.isDirectory() === true;

/**
 * Opened this way a file can neither be a symlink followed (O_NOFOLLOW) nor make the open wait: a
 * FIFO planted in the folder opens at once (O_NONBLOCK) and is then told apart by fstat. Without
 * it, opening one for reading waits for a writer that never comes.
 */
export const ARTIFACT_OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * Whether an open file is the artifact `name` of execution `id`, by the path the system says it
 * was opened at (Linux's /proc/self/fd): the folders on the way are checked before the open, but
 * a handler can swap a link in between (a tester did, 300 times in 24,677 listings). True where
 * the system cannot say.
 */
export function openedAsArtifact(fd: number, root: string, id: string, name: string): boolean {
  const opened = openedPath(fd);
  return opened === null || opened === realArtifactPath(root, id, name);
}

/** The path the system says `fd` was opened at (Linux's /proc/self/fd), or null where it cannot say. */
function openedPath(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

/** Where `parts` under the checkout's artifacts folder really are; null when the checkout cannot be resolved. */
function realArtifactPath(root: string, ...parts: string[]): string | null {
  try {
    return join(realpathSync(root), ".docket", "artifacts", ...parts);
  } catch {
    return null;
  }
}

/** Read this much at a time to hash a file: never a whole file in memory. */
const HASH_CHUNK = 1024 * 1024;
/** Hashes kept, by file identity and version: listing a folder again reads nothing. */
const HASHES_KEPT = 4096;
const hashes = new Map<string, string>();

/**
 * Lists the regular files of an execution's artifact folder with size and SHA-256; symlinks,
 * FIFOs and folders are ignored. A file larger than `hashMaxBytes` (artifact_bytes: larger than
 * any `ctx.artifacts.write` makes, so put there some other way) is listed with `sha256: null`:
 * hashing it would hold the main thread for seconds (1.5 GB: 6 s, and its bytes in memory). A
 * hash is computed once per version of a file (its inode, size and times), a chunk at a time.
 */
export function listArtifacts(root: string, id: string, hashMaxBytes = Number.POSITIVE_INFINITY): ArtifactInfo[] {
  const dir = ownFolder(root, id);
  if (dir === null) return [];
  let names: string[];
  try {
    names = readdirSync(dir).filter(isArtifactName).sort();
  } catch {
    return [];
  }
  const files: ArtifactInfo[] = [];
  for (const name of names) {
    const path = join(dir, name);
    if (!lstatSync(path, { throwIfNoEntry: false })?.isFile()) continue;
    let fd: number;
    try {
      fd = openSync(path, ARTIFACT_OPEN_FLAGS);
    } catch {
      // Gone, or swapped for a link, since the listing: not an artifact now.
      continue;
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile() || !openedAsArtifact(fd, root, id, name)) continue;
      files.push({ name, bytes: stat.size, sha256: stat.size > hashMaxBytes ? null : hashOf(fd, `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`) });
    } finally {
      closeSync(fd);
    }
  }
  return files;
}

function hashOf(fd: number, version: string): string {
  const known = hashes.get(version);
  if (known !== undefined) return known;
  const hash = createHash("sha256");
  const chunk = Buffer.allocUnsafe(HASH_CHUNK);
  for (let read; (read = readSync(fd, chunk, 0, HASH_CHUNK, null)) > 0; ) hash.update(chunk.subarray(0, read));
  const digest = hash.digest("hex");
  if (hashes.size >= HASHES_KEPT) hashes.delete(hashes.keys().next().value!);
  hashes.set(version, digest);
  return digest;
}

/**
 * True when an execution's artifact folder holds anything: its artifacts are not released. Cheap
 * (one readdir). A partial file a crash left counts too: the execution is kept until it is
 * released, which removes the folder with it, never forgotten with its folder left behind.
 */
export function hasArtifacts(root: string, id: string): boolean {
  // A link where the folder should be holds no artifact, but it is something to release: counted.
  if (lstatSync(artifactsDir(root, id), { throwIfNoEntry: false })?.isSymbolicLink()) return true;
  const dir = ownFolder(root, id);
  if (dir === null) return false;
  try {
    return readdirSync(dir).length > 0;
  } catch {
    return false;
  }
}

/** Deletes an execution's artifact folder; returns how many files it held. */
export function removeArtifacts(root: string, id: string): number {
  // Through a linked .docket/ or artifacts/ folder, the rm would delete a folder elsewhere.
  if (!ownArtifactsRoot(root)) return 0;
  const count = listArtifacts(root, id).length;
  const dir = artifactsDir(root, id);
  // The folder's content is removed through the folder opened and found to be the execution's own
  // (its path as the system opened it): a link swapped in on the way after the check above leads
  // nowhere else (a tester's race deleted 15 of 40 folders outside the checkout). Then the folder
  // itself, empty: rmdir never follows a link. Where the system cannot say, by its path.
  let fd: number | null = null;
  try {
    fd = openSync(dir, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0));
  } catch {
    // Not there, or a link where the folder should be: a link is removed itself (unlink removes no
    // folder), never what it leads to.
    try {
      if (lstatSync(dir).isSymbolicLink()) unlinkSync(dir);
    } catch {
      // Gone meanwhile.
    }
    return count;
  }
  try {
    const opened = openedPath(fd);
    if (opened === null) {
      rmSync(dir, { recursive: true, force: true });
      return count;
    }
    if (opened !== realArtifactPath(root, id)) return 0;
    const through = `/proc/self/fd/${fd}`;
    for (const name of readdirSync(through)) rmSync(join(through, name), { recursive: true, force: true });
  } finally {
    closeSync(fd);
  }
  try {
    rmdirSync(dir);
  } catch {
    // Swapped for a link meanwhile (rmdir refuses one), or gone: what it held is removed already.
  }
  return count;
}


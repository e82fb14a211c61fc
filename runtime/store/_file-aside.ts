import { closeSync, constants, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";

/**
 * `text` written to a private file of its own in `dir` (0600, never through a link), synced:
 * nothing half written ever gets the name it is renamed or linked to. Answers its path.
 */
export function writeAside(dir: string, text: string): string {
  const path = join(dir, `.${process.pid}.${Math.random().toString(36).slice(2)}.partial`);
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(path, { force: true });
    throw error;
  }
  closeSync(fd);
  return path;
}

/** `text` put at `path` whole: written aside in its folder, synced, then renamed over whatever was there. */
export function replaceWhole(path: string, dir: string, text: string): void {
  const aside = writeAside(dir, text);
  try {
    renameSync(aside, path);
  } catch (error) {
    rmSync(aside, { force: true });
    throw error;
  }
}

/** Syncs a folder, so that a name made or renamed in it outlives a crash of the machine. */
export function syncFolder(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

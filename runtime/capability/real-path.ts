// Where a path really is, its links followed: what the runtime resolves a linked package or file to.
import { realpathSync } from "node:fs";

/** The path a symbolic link leads to, or the path itself (not a link, or not there). */
export function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

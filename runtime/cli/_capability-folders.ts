import { statSync } from "node:fs";
import { resolve } from "node:path";
import { UsageError } from "./_command-line.ts";

/**
 * The folders given with --capabilities, each an existing folder, or a usage error naming the one
 * that is not: listed with a missing one, the built-ins alone showed and the command exited 0, and
 * a run went on without it — a mistyped folder in a CI step passing unseen (capabilities.verify
 * fails on it too).
 */
export function existingFolders(dirs: string[], command: string): string[] {
  for (const dir of dirs) {
    let folder = false;
    try {
      folder = statSync(resolve(process.cwd(), dir)).isDirectory();
    } catch {
      // Missing, or not to be looked at: not a folder to load.
    }
    if (!folder) throw new UsageError(`--capabilities ${dir} is not a folder. Give an existing folder of capability files.`, command);
  }
  return dirs;
}

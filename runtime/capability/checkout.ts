import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/**
 * The checkout a process serves, found as git finds it: the nearest ancestor of `cwd` holding a
 * `.git` entry (a folder, or a file in worktrees and submodules), else `cwd` itself (docs/architecture.md).
 */
export function findCheckoutRoot(cwd: string): string {
  const start = resolve(cwd);
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, ".git"))) return dir;
    if (dirname(dir) === dir) return start;
  }
}

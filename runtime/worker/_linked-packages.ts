import { readdirSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";

/** Entries of node_modules folders looked at, at most: a lookup stays cheap whatever is installed. */
const MAX_ENTRIES = 20_000;

/**
 * Whether a file (by its real path) is a package's: inside a node_modules folder, or inside the
 * folder of a package linked into one (`npm install ./vendor/pkg`, a workspace), which Bun runs
 * from its real path, outside node_modules. The links are those of every node_modules folder a
 * module in `fromDir` resolves packages from (it and its ancestors'), read once.
 */
export function packagePaths(fromDir: string): (path: string) => boolean {
  const roots = linkedPackageRoots(fromDir);
  return (path) => path.includes("/node_modules/") || roots.some((root) => path.startsWith(root));
}

/** The real folders (each ending in "/") of the packages linked into the node_modules folders `fromDir` resolves from. */
export function linkedPackageRoots(fromDir: string): string[] {
  const roots = new Set<string>();
  let seen = 0;
  const linksIn = (folder: string, scoped: boolean) => {
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (++seen > MAX_ENTRIES) return;
      if (entry.isSymbolicLink()) {
        let real: string;
        try {
          real = realpathSync(join(folder, entry.name));
        } catch {
          continue; // a link to nothing leads to no code
        }
        if (!real.includes("/node_modules/")) roots.add(`${real}/`);
      } else if (!scoped && entry.name.startsWith("@") && entry.isDirectory()) linksIn(join(folder, entry.name), true);
    }
  };
  for (let dir = fromDir; ; dir = dirname(dir)) {
    linksIn(join(dir, "node_modules"), false);
    if (dirname(dir) === dir || seen > MAX_ENTRIES) break;
  }
  return [...roots];
}

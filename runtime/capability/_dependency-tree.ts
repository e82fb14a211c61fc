// The packages a package needs, as installed: docs/authoring.md, "A package installed while serving".
import { readConfigJson } from "./config-file.ts";
import { installedPackageDir } from "./_missing-package.ts";

/** How many packages one walk visits at most: a dependency tree larger than any real one. */
export const MAX_TREE_PACKAGES = 5_000;

/** One package of a tree: its name, its folder, and the folder of the package that needs it. */
export interface TreePackage {
  name: string;
  dir: string;
  neededBy: string;
  /** Reached through `dependencies` alone: an optional or peer dependency, or one of theirs, may be absent by design. */
  required: boolean;
}

/** A package's dependencies, and theirs, where the runtime finds them; and the required ones it finds nowhere. */
export interface DependencyTree {
  found: TreePackage[];
  /** Listed under `dependencies` and not installed where its dependent would find it (an install still writing, or one removed). */
  missing: Array<{ name: string; neededBy: string }>;
}

/**
 * Walks the packages `dir` (an installed package's folder) needs: its package.json's
 * `dependencies`, `optionalDependencies` and `peerDependencies`, each found as Node resolves a
 * package from its dependent's folder, then theirs, each folder once. A manifest is read again
 * only once changed (config-file.ts).
 */
export function dependencyTree(dir: string): DependencyTree {
  const found: TreePackage[] = [];
  const missing: DependencyTree["missing"] = [];
  const seen = new Set<string>([dir]);
  const queue = [dir];
  const required = new Map<string, boolean>([[dir, true]]);
  while (queue.length > 0 && seen.size <= MAX_TREE_PACKAGES) {
    const from = queue.shift()!;
    const manifest = readConfigJson(`${from}/package.json`);
    if (manifest === null) continue;
    for (const field of ["dependencies", "optionalDependencies", "peerDependencies"] as const) {
      const listed = manifest[field];
      if (typeof listed !== "object" || listed === null || Array.isArray(listed)) continue;
      for (const name of Object.keys(listed)) {
        const at = installedPackageDir(name, from);
        if (at === null) {
          // An optional or peer dependency may be absent by design.
          if (field === "dependencies") missing.push({ name, neededBy: from });
          continue;
        }
        const needed = field === "dependencies" && required.get(from) === true;
        if (seen.has(at)) {
          // Met again through `dependencies` alone: required after all.
          if (needed && required.get(at) === false) {
            required.set(at, true);
            for (const entry of found) if (entry.dir === at) entry.required = true;
          }
          continue;
        }
        seen.add(at);
        required.set(at, needed);
        found.push({ name, dir: at, neededBy: from, required: needed });
        queue.push(at);
      }
    }
  }
  return { found, missing };
}

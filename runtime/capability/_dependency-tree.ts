// The packages a package needs, as installed: docs/authoring.md, "A package installed while serving".
import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { readConfigJson } from "./config-file.ts";
import { installedPackageDir } from "./_missing-package.ts";

/** How many packages one walk visits at most: a dependency tree larger than any real one. */
export const MAX_TREE_PACKAGES = 5_000;

/** One package of a tree: its name, its folder, and the folder of the package that needs it. */
export interface TreePackage {
  name: string;
  dir: string;
  neededBy: string;
  /**
   * Reached through what each package requires alone — its `dependencies` and its peers not marked
   * optional (`peerDependenciesMeta`) —: an optional dependency or peer, or one of theirs, may be
   * absent by design.
   */
  required: boolean;
}

/** A package's dependencies, and theirs, where the runtime finds them; and the required ones it finds nowhere. */
export interface DependencyTree {
  found: TreePackage[];
  /** Required (as `required` says) and not installed where its dependent would find it (an install still writing, or one removed). */
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
      const meta = manifest.peerDependenciesMeta;
      for (const name of Object.keys(listed)) {
        const optionalPeer = field === "peerDependencies" && typeof meta === "object" && meta !== null && (meta as Record<string, { optional?: unknown }>)[name]?.optional === true;
        const needed = (field === "dependencies" || (field === "peerDependencies" && !optionalPeer)) && required.get(from) === true;
        const at = installedPackageDir(name, from);
        if (at === null) {
          // An optional dependency or peer may be absent by design.
          if (needed) missing.push({ name, neededBy: from });
          continue;
        }
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

/**
 * Where the missing packages of a tree would appear, as one text: for each, every node_modules a
 * look-up from its dependent passes and the package's folder in it, with their modification times
 * ("-" when not there). A package written there (its folder, or its files in a folder made first)
 * changes it; nothing else does, so a tree lacking a package need not be walked again at every read.
 */
export function missingStamp(missing: DependencyTree["missing"]): string {
  const parts: string[] = [];
  for (const { name, neededBy } of missing) {
    for (let dir = neededBy; ; dir = dirname(dir)) {
      const nodeModules = join(dir, "node_modules");
      parts.push(`${mtimeOf(nodeModules)}:${mtimeOf(join(nodeModules, name))}`);
      if (dirname(dir) === dir) break;
    }
  }
  return parts.join(",");
}

function mtimeOf(path: string): string {
  try {
    return String(statSync(path).mtimeMs);
  } catch {
    return "-";
  }
}

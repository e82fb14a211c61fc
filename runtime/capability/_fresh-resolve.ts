// Resolving a name as the runtime will, also for what was written after the runtime first looked
// (an `npm install` while serving, a helper created behind an alias): docs/authoring.md, "Live reload".
import { lstatSync, readFileSync, statSync } from "node:fs";
import { basename, dirname } from "node:path";
import { aliasTargets } from "./alias-targets.ts";
import { installedPackageDir, packageOf } from "./_missing-package.ts";
import { processStartedMs } from "./_process-started.ts";

/** The runtime's resolver: a resolved path, or null. */
type Resolve = (specifier: string, fromDir: string) => string | null;

/**
 * `resolve(specifier, fromDir)`, asked again after refreshing what the runtime keeps. The runtime
 * keeps every folder listing it read for the life of the process, so a package installed since
 * (into a node_modules it had listed, or one that did not exist) and a file created since in a
 * folder an alias leads to (`@lib/q` → `../lib/q.ts`, `#lib/q.ts`) stay "not found" from where
 * they are imported. A relative look-up from the folder itself reads that folder again: for a
 * package, `./package.json` from its folder; for an alias, the target's name from the target's
 * folder, as tsconfig `paths` and package.json `"imports"` name it. This runs on the main thread
 * before a file is tried, and the runtime's folder cache is the process's: every thread sees it.
 */
export function resolveFresh(specifier: string, fromDir: string, resolveWith: Resolve): string | null {
  const pkg = specifier.startsWith("#") ? null : packageOf(specifier);
  const found = resolveWith(specifier, fromDir);
  if (found !== null) {
    // Found, but its own packages may be new to the runtime too (installed with it).
    const installed = pkg === null ? null : installedPackageDir(pkg, fromDir);
    if (installed !== null) refreshDependencies(installed, resolveWith);
    return found;
  }
  const installed = pkg === null ? null : installedPackageDir(pkg, fromDir);
  if (installed !== null) {
    // The name from the folder holding its node_modules first: a package folder the runtime first
    // meets by a relative look-up keeps the stale listing of the folders above it, and nothing
    // required from inside it is ever found (measured: chalk's `require("ansi-styles")`).
    const holder = installed.slice(0, installed.lastIndexOf("/node_modules/"));
    resolveWith(specifier, holder);
    resolveWith("./package.json", installed);
    resolveWith(specifier, holder);
    refreshDependencies(installed, resolveWith);
    return resolveWith(specifier, fromDir);
  }
  const { configs, targets } = aliasTargets(specifier, fromDir);
  if (targets.length === 0) return null;
  // The config itself may be newer than the runtime's listing of its folder (a package.json written since).
  for (const config of configs) resolveWith(`./${basename(config)}`, dirname(config));
  for (const target of targets) resolveWith(`./${basename(target)}`, dirname(target));
  return resolveWith(specifier, fromDir);
}

/** How many packages one refresh walks at most: a dependency tree larger than any real one. */
const MAX_REFRESHED_PACKAGES = 5_000;

/** Each package folder walked from, with the modification time it (or its node_modules) had then: an install writes them anew. */
const refreshedAt = new Map<string, number>();

/**
 * Asks the runtime again for every package that `installed` depends on, and theirs, when
 * `installed` was written after this process started (an `npm install` while serving). The
 * runtime found such a package once asked from the folder its node_modules sits in, but a module
 * of it that required its own dependency (chalk → ansi-styles, installed with it) was told that
 * dependency did not exist, for the process's life (authoring tester, session 46): the same
 * look-up, from the folder the dependency's node_modules sits in, is what makes the runtime see
 * it. Packages installed before the process started are never walked from; each is walked from
 * once per modification of its folder or of the node_modules holding it.
 */
function refreshDependencies(installed: string, resolveWith: Resolve): void {
  // The node_modules holding it changes with every package added beside it: a walk made while an
  // install was still writing is made again once it has written more.
  const own = modifiedMs(installed);
  const changed = own === null ? null : Math.max(own, modifiedMs(dirname(installed)) ?? 0);
  if (changed === null || own! <= processStartedMs() || refreshedAt.get(installed) === changed) return;
  refreshedAt.set(installed, changed);
  const seen = new Set<string>([installed]);
  const queue = [installed];
  while (queue.length > 0 && seen.size <= MAX_REFRESHED_PACKAGES) {
    const dir = queue.shift()!;
    for (const name of dependencyNames(dir)) {
      const found = installedPackageDir(name, dir);
      if (found === null || seen.has(found)) continue;
      seen.add(found);
      resolveWith(name, found.slice(0, found.lastIndexOf("/node_modules/")));
      queue.push(found);
    }
  }
}

/** The names a package.json lists under dependencies, optionalDependencies and peerDependencies. */
function dependencyNames(dir: string): string[] {
  try {
    const manifest = JSON.parse(readFileSync(`${dir}/package.json`, "utf8")) as Record<string, unknown>;
    const names: string[] = [];
    for (const field of ["dependencies", "optionalDependencies", "peerDependencies"]) {
      const listed = manifest[field];
      if (typeof listed === "object" && listed !== null && !Array.isArray(listed)) names.push(...Object.keys(listed));
    }
    return names;
  } catch {
    // No manifest, or one that does not parse: the runtime will say so when it imports the package.
    return [];
  }
}

/** A folder's modification time (its link's, when later), or null when it is gone. */
function modifiedMs(path: string): number | null {
  try {
    return Math.max(lstatSync(path).mtimeMs, statSync(path).mtimeMs);
  } catch {
    return null;
  }
}

// Resolving a name as the runtime will, also for what was written after the runtime first looked
// (an `npm install` while serving, a helper created behind an alias): docs/authoring.md, "Live reload".
import { basename, dirname } from "node:path";
import { aliasTargets } from "./alias-targets.ts";
import { installedPackageDir, packageOf } from "./_missing-package.ts";

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
  const found = resolveWith(specifier, fromDir);
  if (found !== null) return found;
  const pkg = specifier.startsWith("#") ? null : packageOf(specifier);
  const installed = pkg === null ? null : installedPackageDir(pkg, fromDir);
  if (installed !== null) {
    resolveWith("./package.json", installed);
    resolveWith(specifier, installed.slice(0, installed.lastIndexOf("/node_modules/")));
    return resolveWith(specifier, fromDir);
  }
  const { configs, targets } = aliasTargets(specifier, fromDir);
  if (targets.length === 0) return null;
  // The config itself may be newer than the runtime's listing of its folder (a package.json written since).
  for (const config of configs) resolveWith(`./${basename(config)}`, dirname(config));
  for (const target of targets) resolveWith(`./${basename(target)}`, dirname(target));
  return resolveWith(specifier, fromDir);
}

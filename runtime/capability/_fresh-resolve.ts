// Resolving a name as the runtime will, also for what was written after the runtime first looked
// (an `npm install` while serving, a helper created behind an alias): docs/authoring.md, "Live reload".
import { lstatSync, readdirSync, statSync, type Dirent } from "node:fs";
import { basename, dirname, join } from "node:path";
import { aliasTargets } from "./alias-targets.ts";
import { installedPackageDir, packageOf } from "./_missing-package.ts";
import { processStartedMs } from "./_process-started.ts";
import { dependencyTree, missingStamp, type DependencyTree } from "./_dependency-tree.ts";
import { realOrSelf } from "./real-path.ts";

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
  const installed = pkg === null ? null : installedPackageDir(pkg, fromDir);
  const found = resolveWith(specifier, fromDir);
  if (found !== null) {
    // Found, but its own packages may be new to the runtime too (installed with it).
    if (installed !== null) refreshDependencies(installed, resolveWith);
    return found;
  }
  if (installed !== null) {
    // The name from the folder holding its node_modules first: a package folder the runtime first
    // meets by a relative look-up keeps the stale listing of the folders above it, and nothing
    // required from inside it is ever found (measured: chalk's `require("ansi-styles")`).
    const holder = installed.slice(0, installed.lastIndexOf("/node_modules/"));
    // Before anything is resolved into it: each folder from there down to the importer, and down
    // to the package, asked for a node_modules of its own (askNodeModules).
    askNodeModules([...foldersDown(holder, fromDir), ...foldersDown(holder, installed)], resolveWith);
    resolveWith(specifier, holder);
    // Where it really is: a pnpm layout links node_modules/pp to .pnpm/pp@1.0.0/node_modules/pp,
    // whose dependencies sit beside it there (checking tester, session 47).
    const real = realOrSelf(installed);
    // A workspace package (npm links node_modules/@team/lib to packages/lib): its own folders may
    // have been met before a node_modules existed above them (a capability importing one of its
    // files by path), and a package it imports was "not found" from them (authoring checking
    // tester, session 49).
    if (real !== installed && !/\/node_modules\//.test(real)) askNodeModules([...foldersDown(holder, real), ...packageFolders(real)], resolveWith);
    resolveWith("./package.json", installed);
    if (real !== installed) resolveWith("./package.json", real);
    // A file inside it named by path (`pkg/lib/x.js`): its own folder read again, as a relative
    // look-up from there does; the package's folder alone left it "not found" (checking tester, session 47).
    const subpath = specifier.slice(pkg!.length);
    if (subpath.length > 1) {
      const target = join(real, subpath);
      resolveWith(`./${basename(target)}`, dirname(target));
    }
    resolveWith(specifier, holder);
    refreshDependencies(real, resolveWith);
    return resolveWith(specifier, fromDir);
  }
  const alias = aliasTargets(specifier, fromDir);
  const { configs, targets } = alias;
  // Another `#…` there leads nowhere (and `"#a": "#a"` would never end).
  const packages = alias.packages.filter((name) => !name.startsWith("#"));
  if (targets.length === 0 && packages.length > 0) {
    // A package.json "imports" entry naming a package (`"#dep": "ms"`): that package, asked fresh as any (checking tester, session 47).
    for (const named of packages) resolveFresh(named, fromDir, resolveWith);
    return resolveWith(specifier, fromDir);
  }
  if (targets.length === 0) return null;
  // The config itself may be newer than the runtime's listing of its folder (a package.json written since).
  for (const config of configs) resolveWith(`./${basename(config)}`, dirname(config));
  for (const target of targets) resolveWith(`./${basename(target)}`, dirname(target));
  return resolveWith(specifier, fromDir);
}

/**
 * Asks the runtime, from each folder in turn (outermost first), for a `./node_modules` of its own.
 * The runtime keeps, for a folder it met before a node_modules existed above it, that none does:
 * a scoped name (`@acme/x`) was then "not found" from it for the process's life where an unscoped
 * one was found, and so was one from a folder first met inside such a package (its `dist/`) —
 * once asked this way, each folder and those met below it afterwards find it (authoring tester,
 * session 49; measured on Bun 1.4.5, tests/cli/packages.test.ts).
 */
function askNodeModules(folders: readonly string[], resolveWith: Resolve): void {
  for (const folder of new Set(folders)) resolveWith("./node_modules", folder);
}

/** The most folders of one workspace package packageFolders lists. */
const MAX_PACKAGE_FOLDERS = 256;

/** `dir` and its folders below, outermost first, but for node_modules and hidden ones; MAX_PACKAGE_FOLDERS at most. */
function packageFolders(dir: string): string[] {
  const found = [dir];
  for (let i = 0; i < found.length && found.length < MAX_PACKAGE_FOLDERS; i++) {
    let entries: Dirent[];
    try {
      entries = readdirSync(found[i]!, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name === "node_modules" || entry.name.startsWith(".")) continue;
      if (found.length >= MAX_PACKAGE_FOLDERS) break;
      found.push(join(found[i]!, entry.name));
    }
  }
  return found;
}

/** `from`, then each folder below it down to `to` (`to` inside `from`); `from` alone when `to` is not inside it. */
function foldersDown(from: string, to: string): string[] {
  const folders = [from];
  if (!to.startsWith(`${from}/`)) return folders;
  let at = from;
  for (const part of to.slice(from.length + 1).split("/")) {
    if (part === "") continue;
    at = `${at}/${part}`;
    folders.push(at);
  }
  return folders;
}

/** Each package folder walked from, with the modification time it (or the node_modules holding it) had then: an install writes them anew. */
const refreshedAt = new Map<string, { changed: number; missing: DependencyTree["missing"]; stamp: string }>();

/**
 * Asks the runtime again for every package that `installed` depends on, and theirs, when
 * `installed` was written after this process started (an `npm install` while serving). The
 * runtime found such a package once asked from the folder its node_modules sits in, but a module
 * of it that required its own dependency (chalk → ansi-styles, installed with it) was told that
 * dependency did not exist, for the process's life (authoring tester, session 46): the same
 * look-up, from the folder the dependency's node_modules sits in, is what makes the runtime see
 * it; its own folder is read again after. Packages installed before the process started are never
 * walked from; each is walked from again once it or its node_modules changes (npm writes
 * node_modules/.package-lock.json last), or, while a dependency it requires is not there yet (a
 * walk made while the install was still writing), once something is written where it would be.
 */
function refreshDependencies(installed: string, resolveWith: Resolve): void {
  const own = modifiedMs(installed);
  if (own === null || own <= processStartedMs()) return;
  // The node_modules itself, not a scope's folder (`node_modules/@babel`), which an install's last
  // write leaves alone; a workspace package's real folder (packages/lib) is in none.
  const at = installed.lastIndexOf("/node_modules/");
  const nodeModules = at < 0 ? null : installed.slice(0, at + "/node_modules".length);
  const changed = Math.max(own, nodeModules === null ? 0 : (modifiedMs(nodeModules) ?? 0));
  // Walked again only once something changed where it, or what it still lacks, would be (each read
  // walked a tree lacking one: 200 files over a 1,500-package tree took 44 s a reload, checking tester, session 47).
  const last = refreshedAt.get(installed);
  if (last !== undefined && last.changed === changed && missingStamp(last.missing) === last.stamp) return;
  const tree = dependencyTree(installed);
  // The folders of a workspace package (its real folder outside node_modules) import its
  // dependencies: asked too, from the folder holding its link down.
  const real = realOrSelf(installed);
  if (!/\/node_modules\//.test(real)) {
    const holder = installed.includes("/node_modules/") ? installed.slice(0, installed.lastIndexOf("/node_modules/")) : dirname(real);
    askNodeModules([...foldersDown(holder, real), ...packageFolders(real)], resolveWith);
  }
  for (const dependency of tree.found) {
    const holder = dependency.dir.slice(0, dependency.dir.lastIndexOf("/node_modules/"));
    askNodeModules(foldersDown(holder, dependency.dir), resolveWith);
    resolveWith(dependency.name, holder);
    resolveWith("./package.json", dependency.dir);
  }
  refreshedAt.set(installed, { changed, missing: tree.missing, stamp: missingStamp(tree.missing) });
}


/** A folder's modification time (its link's, when later), or null when it is gone. */
function modifiedMs(path: string): number | null {
  try {
    return Math.max(lstatSync(path).mtimeMs, statSync(path).mtimeMs);
  } catch {
    return null;
  }
}

// A package uninstalled while docket runs: docs/authoring.md, "A package installed while serving".
import { statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname } from "node:path";
import type { CapabilitySources } from "./capability-sources.ts";
import { dependencyTree, type TreePackage } from "./_dependency-tree.ts";
import { explainUnresolvedPackage, installAdvice, installedPackageDir, packageOf, SERVED_MODULES } from "./_missing-package.ts";
import { aliasTargets } from "./alias-targets.ts";

/** A package a capability's code imports, as last found installed: its folder and the packages it needs there. */
interface Installed {
  dir: string;
  needs: TreePackage[];
  /** The folders holding it and what it needs, and their modification times then: a removal in any of them changes its folder's. */
  folders: string[];
  stamp: string;
}

/** The modification times of `folders`, as one text ("gone" for one that is not there). */
function stampOf(folders: readonly string[]): string {
  return folders
    .map((folder) => {
      try {
        return String(statSync(folder).mtimeMs);
      } catch {
        return "gone";
      }
    })
    .join(",");
}

/**
 * Each package a capability's code imported (by name and importing folder) as last found installed
 * in this process, whichever file imported it. Kept while no read imports it: a text that comes
 * back (an undo, after a save that did not import it or did not parse) is the module the runtime
 * keeps, which would be served on without its package (checking tester, session 47).
 */
const installedBefore = new Map<string, Installed>();

/** Each package folder's required tree as last walked, shared by every folder importing it. */
const treeOf = new Map<string, Installed>();

/**
 * What the package at `dir` requires (an optional or peer dependency may be absent by design, and
 * a fresh process loads the package without it: checking tester, session 47), walked again only
 * once a folder holding it or them changed.
 */
function requiredTree(dir: string): Installed {
  const known = treeOf.get(dir);
  if (known !== undefined && stampOf(known.folders) === known.stamp) return known;
  const needs = dependencyTree(dir).found.filter((need) => need.required);
  const folders = [...new Set([dirname(dir), ...needs.map((need) => dirname(need.dir))])];
  const tree = { dir, needs, folders, stamp: stampOf(folders) };
  treeOf.set(dir, tree);
  return tree;
}

/**
 * Why a capability file can no longer load because a package its code imports, or one of the
 * packages that one needs, was uninstalled since the file was last read (`rm -rf node_modules/x`,
 * an `npm install` that pruned it), or null.
 *
 * The runtime keeps a module it imported, so the file's unchanged version was served on as loaded
 * — listed, called directly — while every execution of it failed `internal` on a fresh worker
 * that could not find the package (authoring tester, session 46). Only what loads with the code
 * counts: an `import` statement as the runtime reads it (not `import type`, not a name in a
 * string, not an `import()` or `require` that may sit in a try), of a package this process saw
 * installed for that file, and still imported now — an import removed since is no reason (a
 * checking tester found the error kept after the import was gone). A package the code needs
 * that moved (hoisted) but is still found from its dependent is not gone.
 */
export function uninstalledSince(sources: CapabilitySources): string | null {
  const checked = new Set<string>();
  let gone: string | null = null;
  for (const module of sources.modules) {
    if (module.data !== undefined) continue;
    const fromDir = dirname(module.path);
    for (const imported of module.staticImports ?? []) {
      // A package.json "imports" entry stands for the package it names (`"#dep": "ms"`).
      for (const specifier of imported.startsWith("#") ? aliasTargets(imported, fromDir).packages : [imported]) {
        const pkg = packageOf(specifier);
        if (pkg === null || (SERVED_MODULES as readonly string[]).includes(pkg) || pkg === "bun" || builtinModules.includes(pkg) || pkg.startsWith("node:")) continue;
        const key = `${fromDir}\0${pkg}`;
        if (checked.has(key) || aliasTargets(specifier, fromDir).targets.length > 0) continue;
        checked.add(key);
        const was = installedBefore.get(key);
        const dir = installedPackageDir(pkg, fromDir);
        if (dir === null) {
          // Kept: the file stays a load error until the package is back or the import is gone.
          if (was !== undefined) gone ??= explainUnresolvedPackage(pkg, module.path, "", module.text);
          continue;
        }
        // Nothing changed where it and what it needs are installed: no walk (a reload of 200 files
        // importing a package of 1,500 dependencies walked them all, 50 s: checking tester, session 47).
        if (was !== undefined && was.dir === dir && stampOf(was.folders) === was.stamp) continue;
        const missing = was !== undefined && was.dir === dir ? was.needs.find((need) => installedPackageDir(need.name, need.neededBy) === null) : undefined;
        if (missing !== undefined) {
          const advice = installAdvice("", fromDir);
          gone ??= `cannot load the package ${JSON.stringify(pkg)}: the package "${missing.name}" it needs (${missing.dir}) was removed while docket ran. Install the checkout's packages again (\`${advice.command.trim()}\` in ${advice.dir}, or \`npm ci\`).`;
          continue;
        }
        installedBefore.set(key, requiredTree(dir));
      }
    }
  }
  return gone;
}

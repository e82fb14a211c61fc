// A package uninstalled while docket runs: docs/authoring.md, "A package installed while serving".
import { statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join } from "node:path";
import type { CapabilitySources } from "./capability-sources.ts";
import { realOrSelf } from "./real-path.ts";
import { dependencyTree, missingStamp, type TreePackage } from "./_dependency-tree.ts";
import { explainUnresolvedPackage, installAdvice, installedPackageDir, installedPackageOf, packageOf, SERVED_MODULES } from "./_missing-package.ts";
import { aliasTargets } from "./alias-targets.ts";

/** A package a capability's code imports, as last found installed: its folder and the packages it needs there. */
interface Installed {
  dir: string;
  needs: TreePackage[];
  /** What it requires that is installed nowhere it would be found. */
  lacking: Array<{ name: string; neededBy: string }>;
  /** The folders holding it and what it needs, and their modification times then: a removal in any of them changes its folder's. */
  folders: string[];
  stamp: string;
  /** Where what it lacks would appear, as it was (missingStamp). */
  lackingStamp: string;
}

/** The modification times of `folders` (and files), as one text ("gone" for one that is not there). */
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
 * What the package at `dir` requires (an optional dependency or peer may be absent by design, and
 * a fresh process loads the package without it: checking tester, session 47), walked again only
 * once a folder holding it or them, or its package.json, changed.
 */
function requiredTree(dir: string): Installed {
  const known = treeOf.get(dir);
  // Kept while nothing changed where it, what it requires and what it lacks are, or would be.
  if (known !== undefined && stampOf(known.folders) === known.stamp && missingStamp(known.lacking) === known.lackingStamp) return known;
  // From where it really is: a pnpm layout links it, and its dependencies sit beside the real folder.
  const walked = dependencyTree(realOrSelf(dir));
  const needs = walked.found.filter((need) => need.required);
  // Its own package.json too: edited in place (a workspace package), it requires something else now.
  const folders = [...new Set([dirname(dir), join(dir, "package.json"), ...needs.map((need) => dirname(need.dir))])];
  const tree = { dir, needs, lacking: walked.missing, folders, stamp: stampOf(folders), lackingStamp: missingStamp(walked.missing) };
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
        // Walked again only once a folder holding it or what it requires changed (a reload of 200
        // files importing a package of 1,500 dependencies walked them all, 50 s: checking tester,
        // session 47) — as it is now: an upgrade that requires less is no reason (checking tester).
        const tree = requiredTree(dir);
        // Only what it required and was installed when last seen is gone: one never installed (a
        // peer yarn does not install) is the runtime's to judge (fourth checking tester: every file
        // after the first was refused).
        const lacking = was !== undefined ? tree.lacking.find((need) => was.needs.some((seen) => seen.name === need.name)) : undefined;
        if (lacking !== undefined) {
          const advice = installAdvice("", fromDir);
          gone ??= `cannot load the package ${JSON.stringify(pkg)}: the package "${lacking.name}" it requires (${installedPackageOf(join(lacking.neededBy, "package.json")) ?? pkg} lists it) is installed nowhere it would be found, removed while docket ran. Install the checkout's packages again (\`${advice.command.trim()}\` in ${advice.dir}, or \`npm ci\`).`;
          continue;
        }
        installedBefore.set(key, tree);
      }
    }
  }
  return gone;
}

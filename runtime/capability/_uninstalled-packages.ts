// A package uninstalled while docket runs: docs/authoring.md, "A package installed while serving".
import { existsSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join } from "node:path";
import type { CapabilitySources } from "./capability-sources.ts";
import { dependencyTree } from "./_dependency-tree.ts";
import { explainUnresolvedPackage, installAdvice, installedPackageDir, packageOf, SERVED_MODULES } from "./_missing-package.ts";
import { aliasTargets } from "./alias-targets.ts";

/** One package a capability's code needs, as last found installed: its name, its folder, and which package needs it (null: the code imports it itself). */
interface Needed {
  name: string;
  dir: string;
  neededBy: string | null;
  importer: string;
}

/** The packages each capability file's code was last found needing from a node_modules, with their own, by file. */
const installedBefore = new Map<string, Needed[]>();

/**
 * Why a capability file can no longer load because a package its code imports, or one of the
 * packages that one needs, was uninstalled since the file was last read (`rm -rf node_modules/x`,
 * an `npm install` that pruned it), or null.
 *
 * The runtime keeps a module it imported, so the file's unchanged version was served on as loaded
 * — listed, called directly — while every execution of it failed `internal` on a fresh worker
 * that could not find the package (authoring tester, session 46). A package counts only when its
 * code imports it as the runtime reads the code (not a type-only import, nor a name in a string)
 * and this process saw it installed for that file: one never installed in a node_modules (the
 * runtime found it elsewhere) is left to the runtime, as at start.
 */
export function uninstalledSince(sources: CapabilitySources): string | null {
  const before = installedBefore.get(sources.file) ?? [];
  const gone = before.find((needed) => !existsSync(join(needed.dir, "package.json")));
  if (gone !== undefined) {
    if (gone.neededBy === null) return explainUnresolvedPackage(gone.name, gone.importer, "", sources.modules.find((module) => module.path === gone.importer)?.text);
    const advice = installAdvice("", dirname(gone.importer));
    return `cannot load the package ${JSON.stringify(relativeName(gone.neededBy))}: the package "${gone.name}" it needs (${gone.dir}) was removed while docket ran. Install the checkout's packages again (\`${advice.command.trim()}\` in ${advice.dir}, or \`npm ci\`).`;
  }
  installedBefore.set(sources.file, neededBy(sources));
  return null;
}

/** `…/node_modules/@scope/name` → `@scope/name`; `…/node_modules/name` → `name`. */
function relativeName(dir: string): string {
  return dir.slice(dir.lastIndexOf("/node_modules/") + "/node_modules/".length);
}

/** The packages the sources' code imports, as the runtime reads it, found in a node_modules, and the packages each needs. */
function neededBy(sources: CapabilitySources): Needed[] {
  const needed: Needed[] = [];
  const seen = new Set<string>();
  for (const module of sources.modules) {
    if (module.data !== undefined) continue;
    const fromDir = dirname(module.path);
    for (const specifier of module.literals ?? []) {
      const pkg = packageOf(specifier);
      if (pkg === null || (SERVED_MODULES as readonly string[]).includes(pkg) || pkg === "bun" || builtinModules.includes(pkg) || specifier.startsWith("#")) continue;
      if (aliasTargets(specifier, fromDir).targets.length > 0) continue;
      const dir = installedPackageDir(pkg, fromDir);
      if (dir === null || seen.has(dir)) continue;
      seen.add(dir);
      needed.push({ name: pkg, dir, neededBy: null, importer: module.path });
      for (const dependency of dependencyTree(dir).found) {
        if (seen.has(dependency.dir)) continue;
        seen.add(dependency.dir);
        needed.push({ name: dependency.name, dir: dependency.dir, neededBy: dependency.neededBy, importer: module.path });
      }
    }
  }
  return needed;
}

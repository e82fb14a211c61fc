// A package uninstalled while docket runs: docs/authoring.md, "A package installed while serving".
import { dirname } from "node:path";
import type { CapabilitySources } from "./capability-sources.ts";
import { explainUnresolvedPackage, installedPackageDir, packagesImportedBy } from "./_missing-package.ts";

/** The packages each capability file's modules were last found importing from a node_modules, by file. */
const installedBefore = new Map<string, Set<string>>();

/**
 * Why a capability file can no longer load because a package its code imports was uninstalled
 * since it was last read (`rm -rf node_modules/x`, an `npm install` that pruned it), or null.
 *
 * The runtime keeps a module it imported, so the file's unchanged version was served on as loaded
 * — listed, called directly — while every execution of it failed `internal` on a fresh worker
 * that could not find the package (authoring tester, session 46). Only a package this process saw
 * installed for that file counts: one never installed in node_modules (the runtime found it
 * elsewhere) is left to the runtime, as at start.
 */
export function uninstalledSince(sources: CapabilitySources): string | null {
  const seen = new Set<string>();
  let gone: { pkg: string; importer: string } | null = null;
  const before = installedBefore.get(sources.file);
  for (const module of sources.modules) {
    if (module.data !== undefined) continue;
    const fromDir = dirname(module.path);
    for (const pkg of packagesImportedBy(module.text, fromDir)) {
      if (installedPackageDir(pkg, fromDir) !== null) seen.add(pkg);
      else if (gone === null && before?.has(pkg)) gone = { pkg, importer: module.path };
    }
  }
  if (gone !== null) return explainUnresolvedPackage(gone.pkg, gone.importer, "", sources.modules.find((module) => module.path === gone.importer)?.text);
  installedBefore.set(sources.file, seen);
  return null;
}

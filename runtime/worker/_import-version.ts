import { readFile } from "node:fs/promises";
import { CapabilityError } from "../capability/capability-error.ts";
import { fileVersion, versionedSpecifier } from "../capability/capability-version.ts";

/**
 * Imports the version of a capability file the main thread registered, and only that version
 * (docs/authoring.md, "Versions"). The file is read before and after the import: the runtime
 * reads it itself in between, so the module holds that text only when both reads are the
 * version. Otherwise the task fails `capability_changed` before its handler runs, and the
 * module, whose text is unknown, is never used again under that version's specifier.
 */
export function createVersionImporter(importFile: (specifier: string) => Promise<unknown>) {
  // Specifiers whose module may hold another text; the next import of the version takes a new one.
  const spoiled = new Map<string, number>();
  const changed = (file: string, version: string, now: string) =>
    // Before the handler ran: nothing was applied, and running again after the reload is safe.
    new CapabilityError("capability_changed", `${file} changed on disk after docket loaded it (loaded ${version}, now ${now}), so that version can no longer run.`, {
      retryability: "after_delay",
      suggestion: "docket serve reloads the file within a second; run it again then.",
      context: { loaded_version: version, file_version: now },
    });
  const versionOnDisk = async (file: string) => fileVersion(await readFile(file, "utf8"));

  return async function importVersion(file: string, version: string | undefined): Promise<unknown> {
    if (version === undefined || !version.startsWith("sha256:")) return importFile(file);
    const before = await versionOnDisk(file);
    if (before !== version) throw changed(file, version, before);
    const base = versionedSpecifier(file, version);
    const tries = spoiled.get(base);
    const module = await importFile(tries === undefined ? base : `${base}&docket_try=${tries}`);
    const after = await versionOnDisk(file);
    if (after !== version) {
      spoiled.set(base, (tries ?? 0) + 1);
      throw changed(file, version, after);
    }
    return module;
  };
}

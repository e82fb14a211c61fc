import { CapabilityError } from "../capability/capability-error.ts";
import { readRegularFileText } from "../capability/open-regular-file.ts";
import { importTarget, readSources } from "../capability/pinned-sources.ts";

/**
 * Imports the version of a capability the main thread registered, and only that version
 * (docs/authoring.md, "Versions"): the file and its local modules are read, their digest must be
 * the version, and they are imported pinned to exactly those texts (pinned-sources.ts).
 * Otherwise the task fails `capability_changed` before its handler runs.
 *
 * Where nothing is pinned (a CommonJS file, a runtime without the module plugin) the runtime reads
 * the file itself, so it is read before and after the import: the module holds the version only
 * when both reads are it, and a module whose text is unknown is never used again under that
 * version's specifier.
 */
export function createVersionImporter(importFile: (specifier: string) => Promise<unknown>) {
  // Specifiers whose module may hold another text; the next import of the version takes a new one.
  const spoiled = new Map<string, number>();
  const changed = (file: string, version: string, now: string) =>
    // Before the handler ran: nothing was applied, and running again after the reload is safe.
    new CapabilityError("capability_changed", `${file} (or a module it imports) changed on disk after docket loaded it (loaded ${version}, now ${now}), so that version can no longer run.`, {
      retryability: "after_delay",
      // Refused before the file was imported: its handler never ran, a write's included.
      outcome_certainty: "not_applied",
      suggestion: "docket serve loads the saved file again, usually within a second (up to load_timeout_ms, 5 s by default, when its top level is slow to load); run it again then.",
      context: { loaded_version: version, file_version: now },
    });
  const gone = (file: string, version: string, error: unknown) => {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no longer exists" : `can no longer be read (${(error as Error).message})`;
    return new CapabilityError("capability_changed", `${file} (or a module it imports) ${reason} since docket loaded it (loaded ${version}), so that version can no longer run.`, {
      retryability: "after_delay",
      // Refused before the file was imported: its handler never ran, a write's included.
      outcome_certainty: "not_applied",
      suggestion: "docket serve loads the folder again, usually within a second (a renamed file under its new id; up to load_timeout_ms, 5 s by default, when its top level is slow to load); run it again then.",
      context: { loaded_version: version },
    });
  };
  const sourcesOnDisk = async (file: string, version: string) => {
    try {
      return await readSources(file, await readRegularFileText(file, { label: "the capability file" }));
    } catch (error) {
      // The version was read whole when it was loaded, so a file (or helper) that cannot be read
      // now was removed, renamed or replaced since: the handler never ran, as for an edit.
      if (CapabilityError.is(error) || GONE_CODES.has((error as NodeJS.ErrnoException).code ?? "")) throw gone(file, version, error);
      throw error;
    }
  };

  return async function importVersion(file: string, version: string | undefined): Promise<unknown> {
    if (version === undefined || !version.startsWith("sha256:")) return importFile(file);
    const sources = await sourcesOnDisk(file, version);
    if (sources.version !== version) throw changed(file, version, sources.version);
    const target = importTarget(sources);
    if (target.pinned) {
      target.pin();
      return importFile(target.specifier);
    }
    const base = target.specifier;
    const tries = spoiled.get(base);
    const module = await importFile(tries === undefined ? base : `${base}&docket_try=${tries}`);
    const after = (await sourcesOnDisk(file, version)).version;
    if (after !== version) {
      spoiled.set(base, (tries ?? 0) + 1);
      throw changed(file, version, after);
    }
    return module;
  };
}

/** Errors of reading a file that mean it is no longer the file that was loaded (gone, moved, replaced). */
const GONE_CODES = new Set(["ENOENT", "ENOTDIR", "EISDIR", "EACCES", "EPERM", "ELOOP"]);

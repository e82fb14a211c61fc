import { basename } from "node:path";
import { skippedIdReason } from "./capability-id.ts";
import { didYouMeanText } from "./did-you-mean.ts";
import { RESTART_TO_LOAD } from "./_missing-package.ts";
import type { CapabilityCatalog, LoadError, RegisteredCapability } from "./registered.ts";
import type { LookalikeFile } from "./_lookalike-files.ts";

/**
 * What to tell someone who named a capability that is not loaded: the file of that name that did
 * not load and why (the usual case right after an edit), else the loaded ids closest to it, else
 * where the list is. One sentence or two, for a failure's `suggestion`.
 */
export function unknownCapabilityHint(id: string, catalog: Pick<CapabilityCatalog, "list" | "loadErrors" | "lookalikes">): string {
  const broken = loadErrorFor(id, catalog);
  if (broken) {
    const at = broken.line === null ? "" : `:${broken.line}`;
    return `${broken.file}${at} did not load: ${broken.reason}`;
  }
  // A file named for it that discovery does not take (a subfolder, a .tsx): said, not a bare "not loaded".
  const lookalike = lookalikeFor(id, catalog);
  if (lookalike) return `${lookalike.file} is not loaded: ${lookalike.reason}.`;
  // `repo.test`: no file can declare it (its file is taken for a test); said, with what to name it instead.
  const skipped = skippedIdReason(id);
  if (skipped !== null) return `${skipped[0]!.toUpperCase()}${skipped.slice(1)}.`;
  const close = didYouMeanText(id, catalog.list().map((c) => c.id));
  const list = "List the loaded capabilities with capabilities.list (docket capabilities list).";
  return close === "" ? list : `${close} ${list}`;
}

/** The catalog as a plane shows it (its list named `capabilities`): what the HTTP API, the cockpit and plane capabilities hold. */
export interface PlaneCatalog {
  capabilities(): RegisteredCapability[];
  loadErrors(): LoadError[];
  lookalikes?(): LookalikeFile[];
}

/** unknownCapabilityHint, read from a plane. */
export function planeCapabilityHint(id: string, plane: PlaneCatalog): string {
  return unknownCapabilityHint(id, { list: () => plane.capabilities(), loadErrors: () => plane.loadErrors(), lookalikes: () => plane.lookalikes?.() ?? [] });
}

/** What to do about a look-alike file (lookalikeFor): the same words over HTTP and in the cockpit. */
export const LOOKALIKE_SUGGESTION = "Move or rename the file as said: a server watching its folders loads it once it is there (one started with --no-watch, once restarted).";

/** The file that looks like `id`'s capability file but is not loaded (a subfolder, a .tsx), or undefined. */
export function lookalikeFor(id: string, plane: Pick<PlaneCatalog, "lookalikes">): LookalikeFile | undefined {
  return plane.lookalikes?.().find((file) => file.id === id);
}

/**
 * What to do about a file that did not load: correct it, which a watching server picks up once it
 * is saved — unless its reason is one only a restart clears (an alias or a package newer than the
 * process, which the runtime does not look up again).
 */
export function loadErrorSuggestion(error: LoadError): string {
  if (error.reason.includes(RESTART_TO_LOAD)) return `${RESTART_TO_LOAD}: this process keeps what it resolved when it first loaded ${basename(error.file)}, and saving the file again does not change that.`;
  return "Correct the file: a server watching its folders loads it again once it is saved (one started with --no-watch, once restarted).";
}

/**
 * The load error of the file that would have declared `id`: named after it, or, failing that, one
 * that declares it under another name (renamed without its id: `team.sleepy.ts` declaring
 * "team.slow", refused as file_name_mismatch). Undefined when none.
 */
export function loadErrorFor(id: string, catalog: Pick<CapabilityCatalog, "loadErrors">): LoadError | undefined {
  const errors = catalog.loadErrors();
  const declares = `declares id ${JSON.stringify(id)};`;
  return errors.find((e) => basename(e.file) === `${id}.ts` || basename(e.file) === `${id}.js`) ?? errors.find((e) => e.reason.includes(declares));
}

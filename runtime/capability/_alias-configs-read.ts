import { readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { parseJsonc } from "./jsonc.ts";

/**
 * The alias configs (tsconfig.json "paths", package.json "imports") as this thread first met them:
 * the runtime reads them once per thread, when it first resolves from a folder, and keeps what it
 * read. A config written or created since resolves its aliases the old way in a thread that read
 * them before — a version of a capability other than the one loaded — until the process restarts.
 * Kept: when each was last written, and what of it decides where an alias leads (`mapping`).
 */
const firstSeen = new Map<string, Seen>();

interface Seen {
  writtenAt: number;
  mapping: string;
}

/** The names of the configs that may hold a folder's aliases. */
const CONFIGS = ["tsconfig.json", "package.json"];

/** The time a config was last written, or -1 when there is none. */
function writtenAt(config: string): number {
  try {
    return statSync(config).mtimeMs;
  } catch {
    return -1;
  }
}

/**
 * What of a config decides where its aliases lead: a tsconfig.json's `extends`, `paths` and
 * `baseUrl`, a package.json's `"imports"`. Everything else a save changes there
 * (`npm install` adding a dependency, `"types"` added as editor-types.md says) leaves every alias
 * where it was (hostile tester, session 38: such a save made each thread that had not imported
 * an alias yet refuse it, and every call failed as changed on disk). A config that does not
 * parse is kept whole: any change of it counts. One that is not there maps nothing, as one
 * without any of those fields.
 */
function mappingOf(config: string): string {
  let text: string;
  try {
    text = readFileSync(config, "utf8");
  } catch {
    return "{}";
  }
  try {
    const json = parseJsonc(text) as Record<string, unknown> | null;
    if (basename(config) === "package.json") return JSON.stringify({ imports: json?.imports });
    const options = (json?.compilerOptions ?? {}) as Record<string, unknown>;
    return JSON.stringify({ extends: json?.extends, paths: options.paths, baseUrl: options.baseUrl });
  } catch {
    return `unparsed:${text}`;
  }
}

function seenNow(config: string): Seen {
  return { writtenAt: writtenAt(config), mapping: mappingOf(config) };
}

/** Every config path that may govern the folder `dir`: its own and each folder's above, to the root. */
function governing(dir: string): string[] {
  const paths: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    for (const name of CONFIGS) paths.push(join(at, name));
    if (dirname(at) === at) return paths;
  }
}

/** The folders (as named) whose configs this thread noted: each is walked once, not at every read of a capability there. */
const notedFolders = new Set<string>();

/**
 * Notes the configs that may govern the folder `dir` (named; `real()` gives the folder it really
 * is, asked only the first time) as they are now (absent ones too: one created later is a change),
 * unless this thread met them already: the runtime reads them as it imports from there.
 */
export function noteAliasConfigs(dir: string, real: () => string = () => dir): void {
  if (notedFolders.has(dir)) return;
  notedFolders.add(dir);
  for (const config of governing(real())) if (!firstSeen.has(config)) firstSeen.set(config, seenNow(config));
}

/**
 * The configs governing `dir` whose aliases were written, created or removed since this thread
 * first met them (each met now is noted): a save that left them as they were is no change.
 */
function changedSinceSeen(dir: string): string[] {
  return governing(dir).filter((config) => {
    const first = firstSeen.get(config);
    if (first === undefined) {
      firstSeen.set(config, seenNow(config));
      return false;
    }
    return writtenAt(config) !== first.writtenAt && mappingOf(config) !== first.mapping;
  });
}

/** Aliases this thread resolved while their configs were as first met: `fromDir\0specifier` → the file. */
const resolvedBefore = new Map<string, string>();

/**
 * The configs that make `specifier` (from `fromDir`) resolve otherwise in this thread's runtime
 * than they read now (`resolvedNow`: the file they lead to, or null when none): none when it
 * resolves as it did before, or when the configs are as this thread first met them, or when it
 * never resolved and still does not (a package, a missing file); else those changed since.
 */
export function staleAliasConfigs(specifier: string, fromDir: string, resolvedNow: string | null): string[] {
  const key = `${fromDir}\0${specifier}`;
  const before = resolvedBefore.get(key);
  if (resolvedNow !== null && before === resolvedNow) return [];
  const changed = changedSinceSeen(fromDir);
  if (changed.length === 0) {
    if (resolvedNow !== null) resolvedBefore.set(key, resolvedNow);
    return [];
  }
  return resolvedNow === null && before === undefined ? [] : changed;
}

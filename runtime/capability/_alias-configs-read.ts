import { statSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The alias configs (tsconfig.json "paths", package.json "imports") as this thread first met them:
 * the runtime reads them once per thread, when it first resolves from a folder, and keeps what it
 * read. A config written or created since resolves its aliases the old way in a thread that read
 * them before — a version of a capability other than the one loaded — until the process restarts.
 */
const firstSeen = new Map<string, number>();

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
  for (const config of governing(real())) if (!firstSeen.has(config)) firstSeen.set(config, writtenAt(config));
}

/** The configs governing `dir` written, created or removed since this thread first met them (each met now is noted). */
function changedSinceSeen(dir: string): string[] {
  return governing(dir).filter((config) => {
    const now = writtenAt(config);
    const first = firstSeen.get(config);
    if (first === undefined) firstSeen.set(config, now);
    return first !== undefined && first !== now;
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

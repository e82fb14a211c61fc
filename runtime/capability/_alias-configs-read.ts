import { statSync } from "node:fs";
import { join } from "node:path";
import { nearestManifest, nearestTsconfig } from "./alias-targets.ts";

/**
 * The alias configs (tsconfig.json "paths", package.json "imports") as this thread first met them:
 * the runtime reads each once per thread, when it first resolves from its folder, and keeps what it
 * read. A config changed since resolves its aliases the old way in a thread that read it before —
 * a version of a capability other than the one loaded — until the process restarts.
 */
const firstSeen = new Map<string, number>();

/** The time a config was last written, or -1 when there is none. */
function writtenAt(config: string): number {
  try {
    return statSync(config).mtimeMs;
  } catch {
    return -1;
  }
}

/** Notes the configs that govern the folder `dir` as they are now, unless this thread met them already: the runtime reads them as it imports from there. */
export function noteAliasConfigs(dir: string): void {
  // The folder's own, absent ones too: one created later is a change of what the runtime read there.
  for (const config of [join(dir, "tsconfig.json"), join(dir, "package.json"), nearestTsconfig(dir), nearestManifest(dir)]) {
    if (config !== null && !firstSeen.has(config)) firstSeen.set(config, writtenAt(config));
  }
}

/** Those of `configs` written since this thread first met them (each met now is noted). */
export function aliasConfigsChanged(configs: string[]): string[] {
  return configs.filter((config) => {
    const now = writtenAt(config);
    const first = firstSeen.get(config);
    if (first === undefined) firstSeen.set(config, now);
    return first !== undefined && first !== now;
  });
}

/** Aliases this thread resolved while their configs were as first met: `fromDir\0specifier` → the file. */
const resolvedBefore = new Map<string, string>();

/**
 * The configs that make `specifier` (from `fromDir`, found at `resolved` by this thread's runtime,
 * or null when it does not find it though they map it to a file) resolve otherwise in this thread's
 * runtime than they read now: none when it resolved the same before, or when its configs are as
 * this thread first met them; else those written since.
 */
export function staleAliasConfigs(specifier: string, fromDir: string, resolved: string | null, configs: string[]): string[] {
  const key = `${fromDir}\0${specifier}`;
  if (resolved !== null && resolvedBefore.get(key) === resolved) return [];
  const changed = aliasConfigsChanged(configs);
  if (changed.length === 0 && resolved !== null) resolvedBefore.set(key, resolved);
  return changed;
}

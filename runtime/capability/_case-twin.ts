import { readdirSync } from "node:fs";
import { basename, dirname } from "node:path";

/**
 * For each of `names` that another of them differs from only by letter case (`cas.one.ts` and
 * `CAS.ONE.ts`), that other name. Bun resolves module paths without regard to case, even where
 * the file system keeps both files: it imports one of the two for both, and the other cannot be
 * loaded at all (docs/architecture.md).
 */
export function caseTwins(names: readonly string[]): Map<string, string> {
  const byFolded = new Map<string, string[]>();
  for (const name of names) {
    const folded = name.toLowerCase();
    const same = byFolded.get(folded);
    if (same) same.push(name);
    else byFolded.set(folded, [name]);
  }
  const twins = new Map<string, string>();
  for (const same of byFolded.values()) {
    if (same.length > 1) for (const name of same) twins.set(name, same.find((other) => other !== name)!);
  }
  return twins;
}

/** The entry of `file`'s folder whose name differs from the file's only by letter case, or null (none, or the folder cannot be read). */
export function caseTwinOf(file: string): string | null {
  try {
    return caseTwins(readdirSync(dirname(file))).get(basename(file)) ?? null;
  } catch {
    return null;
  }
}

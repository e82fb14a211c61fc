import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { aliasTargets, ON_DISK, tsconfigAliasesWithBase, type AliasConfigs, type ImportKind, type TsconfigAlias } from "./alias-targets.ts";
import { existingModule } from "./_missing-package.ts";

/**
 * The alias configs (tsconfig.json "paths", through its `extends`; package.json "imports") as this
 * thread first met them: the runtime reads them once per thread, when it first resolves from a
 * folder, and keeps what it read. An alias a config written or created since maps elsewhere is
 * resolved the old way in a thread that read them before — a version of a capability other than
 * the one loaded — until the process restarts. Kept: what of each decides where an alias leads
 * (null: no config there), never the rest of the file, which saves change all the time
 * (`npm install` rewriting package.json, `"types"` added to a tsconfig.json).
 */
const tsconfigs = new Map<string, TsconfigAlias[] | null>();
const manifests = new Map<string, { imports: unknown } | null>();

/** The configs on disk now, a tsconfig.json's `baseUrl` counted as where the names it maps lead (tsconfigAliasesWithBase). */
const NOW: AliasConfigs = {
  tsconfig: (path) => (existsSync(path) ? tsconfigAliasesWithBase(path) : null),
  manifest: ON_DISK.manifest,
};

/** The configs as this thread first met them; one not met yet is met now, as it is. */
const FIRST_SEEN: AliasConfigs = {
  tsconfig(path) {
    if (!tsconfigs.has(path)) tsconfigs.set(path, NOW.tsconfig(path));
    return tsconfigs.get(path)!;
  },
  manifest(path) {
    if (!manifests.has(path)) manifests.set(path, NOW.manifest(path));
    return manifests.get(path)!;
  },
};

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
  for (let at = real(); ; at = dirname(at)) {
    FIRST_SEEN.tsconfig(join(at, "tsconfig.json"));
    FIRST_SEEN.manifest(join(at, "package.json"));
    if (dirname(at) === at) return;
  }
}

/**
 * The configs that make `specifier` (imported from `fromDir`) lead elsewhere now than when this
 * thread first met them — where this thread's runtime still resolves it the old way: none when
 * it maps it where it did (whatever else a save changed there, an `extends` base included), or
 * it maps it nowhere then and now (a package, a missing file).
 */
export function staleAliasConfigs(specifier: string, fromDir: string): string[] {
  noteAliasConfigs(fromDir);
  const then = aliasTargets(specifier, fromDir, FIRST_SEEN);
  const now = aliasTargets(specifier, fromDir, NOW);
  // Where it leads: the first target that is a module, as the runtime takes it. A fallback or a
  // condition it never reaches, changed, moves nothing (checking tester).
  if (leadsTo(then.targets) === leadsTo(now.targets)) return [];
  return [...new Set([...now.configs, ...then.configs])];
}

/** Where `specifier` leads now through the configs (`baseUrl` included), imported as `kind`, or null. */
export function aliasLeadsNow(specifier: string, fromDir: string, kind: ImportKind = "import"): string | null {
  return leadsTo(aliasTargets(specifier, fromDir, NOW, kind).targets) || null;
}

/** The module a list of alias targets leads to: the first that exists, or "" when none does (or there is none). */
function leadsTo(targets: string[]): string {
  return targets.map(existingModule).find((path) => path !== null) ?? "";
}

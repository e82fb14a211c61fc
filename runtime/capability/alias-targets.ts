// Where a tsconfig `paths` alias or a package.json `"imports"` entry leads, read by docket itself
// (_fresh-resolve.ts asks those folders again; _missing-package.ts names them in a load error).
import { existsSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { readConfigJson } from "./config-file.ts";

/**
 * The alias configs as some reader sees them: on disk now (ON_DISK), or as a thread first met
 * them (_alias-configs-read.ts). Null: no config at that path.
 */
export interface AliasConfigs {
  /** A tsconfig.json's aliases (tsconfigAliases), or null when there is none at that path. */
  tsconfig(path: string): TsconfigAlias[] | null;
  /** A package.json's `"imports"` value (undefined when it has none), or null when there is none at that path. */
  manifest(path: string): { imports: unknown } | null;
}

/** The alias configs as they are on disk now. */
export const ON_DISK: AliasConfigs = {
  tsconfig: (path) => (existsSync(path) ? tsconfigAliases(path) : null),
  manifest: (path) => (existsSync(path) ? { imports: readConfigJson(path)?.imports } : null),
};

/**
 * The paths an alias may lead to (without the runtime's extension guessing): the nearest
 * tsconfig.json's `paths` and, for `#…`, the nearest package.json's `"imports"`, `*` substituted;
 * and the packages such an entry names instead of a path (`packages`). Configs that do not parse (as JSON with comments and trailing commas) give none; `configs` are the ones
 * that matched. Read from disk, or as `read` gives the configs.
 */
export function aliasTargets(specifier: string, fromDir: string, read: AliasConfigs = ON_DISK, kind: ImportKind = "import"): { configs: string[]; targets: string[]; packages: string[] } {
  const configs: string[] = [];
  const targets: string[] = [];
  // The packages a `"imports"` entry names instead of a path (`"#dep": "ms"`; a `#…` there is no package, and leads nowhere).
  const packages: string[] = [];
  const tsconfig = nearestOf(fromDir, "tsconfig.json", read.tsconfig);
  if (tsconfig !== null) {
    const before = targets.length;
    // Only the best `paths` pattern's targets are tried (its first that exists), as TypeScript and
    // the runtime do; a `baseUrl` look-up after them.
    const best = bestMatch(tsconfig.value.filter((alias) => !alias.base), (alias) => alias.pattern, specifier);
    const base = tsconfig.value.find((alias) => alias.base);
    for (const taken of [best, base === undefined ? null : { value: base, star: specifier }]) {
      if (taken !== null) for (const target of taken.value.targets) targets.push(target.replace("*", taken.star));
    }
    if (targets.length > before) configs.push(tsconfig.path);
  }
  const manifest = specifier.startsWith("#") ? nearestOf(fromDir, "package.json", read.manifest) : null;
  if (manifest !== null) {
    const before = targets.length;
    const imports = manifest.value.imports;
    // One entry is taken: the key itself, else the pattern with the longest part before its `*` (Node's rule).
    const best = bestMatch(Object.entries(isRecord(imports) ? imports : {}), ([pattern]) => pattern, specifier);
    if (best !== null) {
      for (const leaf of takenLeaves(best.value[1], kind)) {
        if (leaf.startsWith("./")) targets.push(resolve(dirname(manifest.path), leaf.replaceAll("*", best.star)));
        else if (!leaf.startsWith("/") && !leaf.startsWith("../")) packages.push(leaf.replaceAll("*", best.star));
      }
    }
    if (targets.length > before) configs.push(manifest.path);
  }
  return { configs, targets, packages };
}

/**
 * The entry whose pattern matches `specifier` best, and what its `*` stands for: a pattern without
 * `*` equal to it, else the matching pattern with the longest part before its `*` (then the longer
 * pattern), the first of equals. Null when none matches.
 */
function bestMatch<T>(entries: T[], patternOf: (entry: T) => string, specifier: string): { value: T; star: string } | null {
  let best: { value: T; star: string; head: number; length: number } | null = null;
  for (const value of entries) {
    const pattern = patternOf(value);
    const star = matched(pattern, specifier);
    if (star === null) continue;
    if (!pattern.includes("*")) return { value, star };
    const head = pattern.indexOf("*");
    if (best === null || head > best.head || (head === best.head && pattern.length > best.length)) best = { value, star, head, length: pattern.length };
  }
  return best;
}

/** The nearest config named `name` up from `dir` that `read` finds, with what it read of it. */
function nearestOf<T>(dir: string, name: string, read: (path: string) => T | null): { path: string; value: T } | null {
  for (let at = dir; ; at = dirname(at)) {
    const path = join(at, name);
    const value = read(path);
    if (value !== null) return { path, value };
    if (dirname(at) === at) return null;
  }
}

/** A tsconfig.json's `paths` alias, its targets made absolute (`*` kept). */
export interface TsconfigAlias {
  config: string;
  pattern: string;
  targets: string[];
  /** The look-up under `baseUrl` of a name `paths` did not map (tsconfigAliasesWithBase): tried after the best pattern. */
  base?: true;
}

/**
 * The `paths` alias matching `specifier` of a tsconfig.json further up than the nearest one to
 * `fromDir` (a checkout's root config, above `capabilities/tsconfig.json`): TypeScript and the
 * runtime read only the nearest config's `paths`, so such an alias does not apply to the file.
 * Null when none matches, or when the nearest config maps it itself.
 */
export function outerAlias(specifier: string, fromDir: string): TsconfigAlias | null {
  let config = nearest(fromDir, "tsconfig.json");
  while (config !== null) {
    const above = dirname(dirname(config));
    if (above === dirname(config)) return null;
    config = nearest(above, "tsconfig.json");
    const match = config === null ? undefined : tsconfigAliases(config).find((alias) => matched(alias.pattern, specifier) !== null);
    if (match) return match;
  }
  return null;
}

/**
 * The configs that decide where an alias imported from `dir` leads: the nearest tsconfig.json and
 * the configs it `extends` (a root `tsconfig.base.json`), and the nearest package.json — watched,
 * so that editing one reloads what imports through it (docs/authoring.md, "Live reload").
 */
export function aliasConfigFiles(dir: string): string[] {
  const tsconfig = nearest(dir, "tsconfig.json");
  const manifest = nearest(dir, "package.json");
  return [...(tsconfig === null ? [] : extendsChain(tsconfig).map((link) => link.file)), ...(manifest === null ? [] : [manifest])];
}

/** The tsconfig.json nearest to `dir`, upwards: the one whose `paths` apply to a file there; null when none. */
export function nearestTsconfig(dir: string): string | null {
  return nearest(dir, "tsconfig.json");
}

/**
 * Every `paths` alias a tsconfig.json has, as TypeScript reads it: its own `paths`, or else those
 * of the config it `extends` (a file; an Nx or Turborepo root's `tsconfig.base.json`), the nearest
 * one in that chain that has any — they are never merged. Targets absolute, `*` kept, from the
 * `baseUrl` of the chain (the config that sets it) or else the folder of the config holding them.
 */
export function tsconfigAliases(config: string): TsconfigAlias[] {
  const chain = extendsChain(config);
  const holder = chain.find((link) => isRecord(link.options.paths));
  if (holder === undefined) return [];
  // `${configDir}` (TypeScript 5.5) is the folder of the config being read, whichever config of the chain wrote it.
  const filled = (path: string) => (path.startsWith(CONFIG_DIR) ? dirname(config) + path.slice(CONFIG_DIR.length) : path);
  const based = chain.find((link) => typeof link.options.baseUrl === "string");
  const base = based ? resolve(dirname(based.file), filled(based.options.baseUrl as string)) : dirname(holder.file);
  return Object.entries(holder.options.paths as Record<string, unknown>)
    .filter((entry): entry is [string, unknown[]] => Array.isArray(entry[1]))
    .map(([pattern, values]) => ({ config, pattern, targets: values.filter((value): value is string => typeof value === "string").map((value) => resolve(base, filled(value))) }));
}

const CONFIG_DIR = "${configDir}";

/**
 * The aliases of a tsconfig.json with what its `baseUrl` adds after them: any other name
 * (`src/v.ts`) looked up under that folder, as TypeScript and the runtime do once `paths` matched
 * nothing — a catch-all `*` last. Only for telling where an import leads (_alias-configs-read.ts):
 * every package name matches it too, and leads nowhere there.
 */
export function tsconfigAliasesWithBase(config: string): TsconfigAlias[] {
  const chain = extendsChain(config);
  const based = chain.find((link) => typeof link.options.baseUrl === "string");
  const aliases = tsconfigAliases(config);
  if (based === undefined) return aliases;
  const baseUrl = based.options.baseUrl as string;
  const filled = baseUrl.startsWith(CONFIG_DIR) ? dirname(config) + baseUrl.slice(CONFIG_DIR.length) : baseUrl;
  return [...aliases, { config, pattern: "*", targets: [join(resolve(dirname(based.file), filled), "*")], base: true }];
}

/** How many configs an `extends` chain is followed through (a cycle ends it too). */
const MAX_EXTENDS = 16;

/** A config and the configs it extends, nearest first: files named by a path (`./base.json`, `../tsconfig.base`), not packages. */
export function extendsChain(config: string): Array<{ file: string; options: Record<string, unknown> }> {
  const chain: Array<{ file: string; options: Record<string, unknown> }> = [];
  const seen = new Set<string>();
  const queue = [config];
  for (let file = queue.shift(); file !== undefined && chain.length < MAX_EXTENDS; file = queue.shift()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const json = readConfigJson(file);
    if (json === null) continue;
    chain.push({ file, options: isRecord(json.compilerOptions) ? json.compilerOptions : {} });
    // TypeScript 5 takes an array too, the last one winning: read last first.
    const named = typeof json.extends === "string" ? [json.extends] : Array.isArray(json.extends) ? json.extends.filter((e): e is string => typeof e === "string").reverse() : [];
    for (const name of named) {
      if (!/^\.{1,2}\/|^\//.test(name)) {
        // A package's config (`@acme/tsconfig/base.json`, `@acme/tsconfig`), found as TypeScript finds it.
        const found = packageConfig(name, dirname(file));
        if (found !== null) queue.push(found);
        continue;
      }
      const path = resolve(dirname(file), name);
      queue.push(existsSync(path) || path.endsWith(".json") ? path : `${path}.json`);
    }
  }
  return chain;
}

/**
 * The file a tsconfig's `extends` names by package (`@acme/tsconfig/base.json`, `@acme/tsconfig`):
 * in the nearest node_modules up from `fromDir` that has it, the path itself, with `.json` added,
 * or for a package folder its package.json `tsconfig` field, else its `tsconfig.json`. Null when none.
 */
function packageConfig(name: string, fromDir: string): string | null {
  for (let at = fromDir; ; at = dirname(at)) {
    const path = join(at, "node_modules", name);
    if (isFile(path)) return path;
    if (isFile(`${path}.json`)) return `${path}.json`;
    if (existsSync(join(path, "package.json")) || existsSync(join(path, "tsconfig.json"))) {
      const field = readConfigJson(join(path, "package.json"))?.tsconfig;
      const config = typeof field === "string" ? join(path, field) : join(path, "tsconfig.json");
      return isFile(config) ? config : null;
    }
    if (dirname(at) === at) return null;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** An alias target as a `paths` entry of a config in `dir`: relative, with `./` or `../` in front, `/` separated. */
export function targetFrom(dir: string, target: string): string {
  const path = relative(dir, target).split(sep).join("/");
  return path.startsWith("../") || path === ".." ? path : `./${path}`;
}

/** What `*` stands for when `pattern` (at most one `*`) matches `specifier`; "" for an exact match; null otherwise. */
function matched(pattern: string, specifier: string): string | null {
  const star = pattern.indexOf("*");
  if (star < 0) return pattern === specifier ? "" : null;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  if (!specifier.startsWith(head) || !specifier.endsWith(tail) || specifier.length < head.length + tail.length) return null;
  return specifier.slice(head.length, specifier.length - tail.length);
}

/** How a module imports a name: `import` (and `import()`), or `require()` — package.json "imports" conditions differ. */
export type ImportKind = "import" | "require";

/** The conditions the runtime matches in a package.json `"imports"` value, by how it is imported (Bun 1.4, measured; never `module`, `types`, `browser`). */
const RUNTIME_CONDITIONS: Record<ImportKind, ReadonlySet<string>> = {
  import: new Set(["bun", "node", "import", "default", "node-addons"]),
  require: new Set(["bun", "node", "require", "default", "node-addons"]),
};

/**
 * The paths of a package.json `"imports"` value the runtime may take: a path, each of an array,
 * or of conditions the first one it matches (`{"types": …, "bun": …, "default": …}` takes "bun"),
 * never one it skips (`types`, `browser`, `require` for an import) — a change there leads nowhere
 * else (third checking tester).
 */
function takenLeaves(value: unknown, kind: ImportKind): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap((item) => takenLeaves(item, kind));
  if (!isRecord(value)) return [];
  const taken = Object.keys(value).find((condition) => RUNTIME_CONDITIONS[kind].has(condition));
  return taken === undefined ? [] : takenLeaves(value[taken], kind);
}

function nearest(dir: string, name: string): string | null {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, name))) return join(at, name);
    if (dirname(at) === at) return null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// Resolving a name as the runtime will, also for what was written after the runtime first looked
// (an `npm install` while serving, a helper created behind an alias): docs/authoring.md, "Live reload".
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { installedPackageDir, packageOf } from "./_missing-package.ts";

/** The runtime's resolver: a resolved path, or null. */
type Resolve = (specifier: string, fromDir: string) => string | null;

/**
 * `resolve(specifier, fromDir)`, asked again after refreshing what the runtime keeps. The runtime
 * keeps every folder listing it read for the life of the process, so a package installed since
 * (into a node_modules it had listed, or one that did not exist) and a file created since in a
 * folder an alias leads to (`@lib/q` → `../lib/q.ts`, `#lib/q.ts`) stay "not found" from where
 * they are imported. A relative look-up from the folder itself reads that folder again: for a
 * package, `./package.json` from its folder; for an alias, the target's name from the target's
 * folder, as tsconfig `paths` and package.json `"imports"` name it. This runs on the main thread
 * before a file is tried, and the runtime's folder cache is the process's: every thread sees it.
 */
export function resolveFresh(specifier: string, fromDir: string, resolveWith: Resolve): string | null {
  const found = resolveWith(specifier, fromDir);
  if (found !== null) return found;
  const pkg = specifier.startsWith("#") ? null : packageOf(specifier);
  const installed = pkg === null ? null : installedPackageDir(pkg, fromDir);
  if (installed !== null) {
    resolveWith("./package.json", installed);
    resolveWith(specifier, installed.slice(0, installed.lastIndexOf("/node_modules/")));
    return resolveWith(specifier, fromDir);
  }
  const { configs, targets } = aliasTargets(specifier, fromDir);
  if (targets.length === 0) return null;
  // The config itself may be newer than the runtime's listing of its folder (a package.json written since).
  for (const config of configs) resolveWith(`./${basename(config)}`, dirname(config));
  for (const target of targets) resolveWith(`./${basename(target)}`, dirname(target));
  return resolveWith(specifier, fromDir);
}

/**
 * The paths an alias may lead to (without the runtime's extension guessing): the nearest
 * tsconfig.json's `paths` and, for `#…`, the nearest package.json's `"imports"`, `*` substituted.
 * Configs that do not parse as JSON (comments, trailing commas) give none.
 */
function aliasTargets(specifier: string, fromDir: string): { configs: string[]; targets: string[] } {
  const configs: string[] = [];
  const targets: string[] = [];
  const tsconfig = nearest(fromDir, "tsconfig.json");
  if (tsconfig !== null) {
    configs.push(tsconfig);
    const options = (readJson(tsconfig)?.compilerOptions ?? {}) as { baseUrl?: unknown; paths?: unknown };
    const base = resolve(dirname(tsconfig), typeof options.baseUrl === "string" ? options.baseUrl : ".");
    for (const [pattern, values] of Object.entries(isRecord(options.paths) ? options.paths : {})) {
      const star = matched(pattern, specifier);
      if (star === null || !Array.isArray(values)) continue;
      for (const value of values) if (typeof value === "string") targets.push(resolve(base, value.replace("*", star)));
    }
  }
  const manifest = specifier.startsWith("#") ? nearest(fromDir, "package.json") : null;
  if (manifest !== null) {
    configs.push(manifest);
    const imports = readJson(manifest)?.imports;
    for (const [pattern, value] of Object.entries(isRecord(imports) ? imports : {})) {
      const star = matched(pattern, specifier);
      if (star === null) continue;
      for (const leaf of stringLeaves(value)) if (leaf.startsWith("./")) targets.push(resolve(dirname(manifest), leaf.replace("*", star)));
    }
  }
  return { configs, targets };
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

/** The strings of a package.json `"imports"` value: a path, or conditions (`{"bun": …, "default": …}`) holding paths. */
function stringLeaves(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringLeaves);
  return isRecord(value) ? Object.values(value).flatMap(stringLeaves) : [];
}

function nearest(dir: string, name: string): string | null {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, name))) return join(at, name);
    if (dirname(at) === at) return null;
  }
}

function readJson(file: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(readFileSync(file, "utf8")) as unknown;
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

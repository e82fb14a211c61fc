import { statSync } from "node:fs";
import { readConfigJson } from "./config-file.ts";
import { join } from "node:path";

/**
 * What an installed package gives an import of one of its paths: the file, or why there is none
 * (what a user does about it differs: build the package, import what it exports, import a file).
 */
export type PackageEntry = { file: string } | { missing: string; fix: string };

/** The conditions of package.json "exports" an import matches on Bun, as its runtime resolves them. */
const IMPORT_CONDITIONS = ["bun", "node", "import", "default"];

const CHECK_PATH = `Check the path against the package's documentation or "exports".`;
const BUILD = "Build the package (one installed from a git checkout or a workspace is often not built), or reinstall it.";

/**
 * What the installed package in `dir` gives an import of `subpath` ("" for the package itself,
 * "/util"), read from its package.json "exports" when it has them, else from its files and
 * "main" as the runtime looks them up. `null` when its package.json cannot be read: nothing can
 * be said.
 */
export function packageEntry(dir: string, subpath: string): PackageEntry | null {
  // Read as any config is: a FIFO named package.json never holds the thread (config-file.ts).
  const manifest = readConfigJson(join(dir, "package.json")) as { exports?: unknown; main?: unknown } | null;
  if (manifest === null) return null;
  if (manifest.exports !== undefined && manifest.exports !== null) return exportedEntry(dir, manifest.exports, `.${subpath}`);
  if (subpath === "") return mainEntry(dir, typeof manifest.main === "string" ? manifest.main : null);
  const path = join(dir, subpath);
  const file = firstFile([path, ...FILE_SUFFIXES.map((suffix) => `${path}${suffix}`)]);
  if (file !== null) return { file };
  if (isDirectory(path)) {
    const folder = mainEntry(path, null);
    if ("file" in folder) return folder;
    return { missing: `${JSON.stringify(`.${subpath}`)} is a folder with no index file (index.js) in it`, fix: "Import a file inside it." };
  }
  return { missing: "it has no such file", fix: CHECK_PATH };
}

const FILE_SUFFIXES = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".json"];
const INDEX_FILES = ["index.js", "index.mjs", "index.cjs", "index.ts", "index.json"];

/** The file a package (or a folder of one) is imported as: its "main", else its index file. */
function mainEntry(dir: string, main: string | null): PackageEntry {
  if (main !== null) {
    const path = join(dir, main);
    const file = firstFile([path, ...FILE_SUFFIXES.map((suffix) => `${path}${suffix}`), ...INDEX_FILES.map((index) => join(path, index))]);
    if (file !== null) return { file };
    return { missing: `its package.json "main" is ${JSON.stringify(main)}, which does not exist (is the package built?)`, fix: BUILD };
  }
  const file = firstFile(INDEX_FILES.map((index) => join(dir, index)));
  if (file !== null) return { file };
  return { missing: `its package.json has no "main" and it has no index file (index.js)`, fix: CHECK_PATH };
}

/** What package.json "exports" give `wanted` ("." or "./util"), as Node's resolution reads them. */
function exportedEntry(dir: string, exports: unknown, wanted: string): PackageEntry {
  // A string, an array or an object of conditions exports "." alone.
  const map = typeof exports === "object" && !Array.isArray(exports) && Object.keys(exports as object).some((key) => key.startsWith(".")) ? (exports as Record<string, unknown>) : { ".": exports };
  const match = matchingKey(Object.keys(map), wanted);
  if (match === null) return { missing: `it is not in its package.json "exports"`, fix: CHECK_PATH };
  const target = conditionalTarget(map[match.key]);
  if (target === null) {
    return {
      missing: `its package.json "exports" maps ${JSON.stringify(match.key)} to null, which keeps it private to the package`,
      fix: `Import what the package exports instead (its documentation or "exports" lists it).`,
    };
  }
  if (typeof target !== "string") {
    const conditions = target.conditions.map((condition) => JSON.stringify(condition)).join(", ");
    if (target.conditions.includes("require")) {
      return {
        missing: `its package.json "exports" gives it only for require() (under ${conditions}), and an import matches none of them`,
        fix: "Import an entry the package exports for import, or load this one with require().",
      };
    }
    return { missing: `its package.json "exports" gives it only under ${conditions}, none of which an import on this runtime matches`, fix: CHECK_PATH };
  }
  const path = substituted(target, match.key, match.rest);
  const file = firstFile([join(dir, path)]);
  if (file !== null) return { file };
  return { missing: `its package.json "exports" maps it to ${JSON.stringify(path)}, which does not exist (is the package built?)`, fix: BUILD };
}

/**
 * The key of "exports" that matches `wanted`: itself, else the pattern (one `*`, or a folder key
 * ending in "/", as older packages write) with the longest prefix; `rest` is what its `*` (or the
 * folder key's end) stands for.
 */
function matchingKey(keys: string[], wanted: string): { key: string; rest: string } | null {
  if (keys.includes(wanted)) return { key: wanted, rest: "" };
  let best: { key: string; rest: string; prefix: number } | null = null;
  for (const key of keys) {
    const star = key.indexOf("*");
    const [prefix, suffix] = star < 0 ? [key, ""] : [key.slice(0, star), key.slice(star + 1)];
    if (star < 0 && !key.endsWith("/")) continue;
    if (wanted.length < prefix.length + suffix.length || !wanted.startsWith(prefix) || !wanted.endsWith(suffix)) continue;
    if (best === null || prefix.length > best.prefix) best = { key, rest: wanted.slice(prefix.length, wanted.length - suffix.length), prefix: prefix.length };
  }
  return best === null ? null : { key: best.key, rest: best.rest };
}

/** A target of "exports" with the part a pattern key matched put in (its `*`, or after a folder target). */
function substituted(target: string, key: string, rest: string): string {
  return key.includes("*") ? target.replaceAll("*", rest) : key.endsWith("/") ? `${target}${rest}` : target;
}

/**
 * The target an import takes from an "exports" value: a path, null (excluded), or the conditions it
 * offers when none of them is one an import matches. An array is taken by its first entry, as the
 * runtime does.
 */
function conditionalTarget(value: unknown): string | null | { conditions: string[] } {
  if (typeof value === "string" || value === null) return value;
  if (Array.isArray(value)) return value.length === 0 ? null : conditionalTarget(value[0]);
  if (typeof value !== "object") return null;
  const conditions = value as Record<string, unknown>;
  for (const [condition, target] of Object.entries(conditions)) {
    if (!IMPORT_CONDITIONS.includes(condition)) continue;
    const found = conditionalTarget(target);
    if (typeof found === "string" || found === null) return found;
  }
  return { conditions: Object.keys(conditions) };
}

function firstFile(paths: string[]): string | null {
  for (const path of paths) {
    try {
      if (statSync(path).isFile()) return path;
    } catch {
      // Not there: the next one.
    }
  }
  return null;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

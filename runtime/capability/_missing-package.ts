import { existsSync, lstatSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { basename, dirname, join, relative } from "node:path";
import { aliasTargets, nearestTsconfig, outerAlias, targetFrom } from "./alias-targets.ts";
import { readConfigJson } from "./config-file.ts";
import { findCheckoutRoot } from "./checkout.ts";
import { packageEntry } from "./_package-entry.ts";
import { processStartedMs } from "./_process-started.ts";

/** The modules every capability file gets from docket itself, whatever node_modules holds. */
export const SERVED_MODULES = ["docket", "valibot"] as const;

/**
 * The package a bare specifier names: `yaml` → `yaml`, `@octokit/rest/dist` → `@octokit/rest`,
 * `lodash/fp` → `lodash`. `null` for what no package manager installs: relative and absolute
 * paths, URLs and runtime schemes (`node:`, `bun:`).
 */
export function packageOf(specifier: string): string | null {
  // `#…` is a package.json "imports" entry, never a package's name.
  if (specifier === "" || specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("#") || specifier.includes(":")) return null;
  const parts = specifier.split("/");
  // A scope has a name: "@/lib" (a path alias, often) names no package.
  if (specifier.startsWith("@")) return parts.length >= 2 && parts[0] !== "@" && parts[1] !== "" ? `${parts[0]}/${parts[1]}` : null;
  return parts[0]!;
}

/** The package whose files hold `path` (`…/node_modules/@scope/pkg/lib/x.js` → `@scope/pkg`): its innermost node_modules; null outside one. */
export function installedPackageOf(path: string): string | null {
  const at = path.lastIndexOf("/node_modules/");
  return at < 0 ? null : packageOf(path.slice(at + "/node_modules/".length));
}

/** The lockfiles a checkout may hold, nearest first wins, and the command each one implies. */
const LOCKFILES: Array<[file: string, add: string]> = [
  ["bun.lock", "bun add"],
  ["bun.lockb", "bun add"],
  ["pnpm-lock.yaml", "pnpm add"],
  ["yarn.lock", "yarn add"],
  ["package-lock.json", "npm install"],
  ["npm-shrinkwrap.json", "npm install"],
];

/** Where to install a package for `fromDir`, and with which command. */
export interface InstallAdvice {
  /** `npm install yaml`, `bun add yaml`, … as the checkout's lockfile implies (npm without one). */
  command: string;
  /** The folder to run it in: the nearest one with a package.json, else the checkout root. */
  dir: string;
}

/**
 * How a user installs `pkg` so that a file in `fromDir` resolves it: the package manager is read
 * from the nearest lockfile upwards (stopping at the checkout root), the folder from the nearest
 * package.json. Node resolution searches `node_modules` from the file's folder upwards, so a
 * package installed there is found.
 */
export function installAdvice(pkg: string, fromDir: string): InstallAdvice {
  const root = findCheckoutRoot(fromDir);
  // Without a .git above, the "root" is fromDir itself: no bound, the search goes on upwards.
  const bounded = existsSync(join(root, ".git"));
  let manifestDir: string | null = null;
  let add: string | null = null;
  for (let dir = fromDir; ; dir = dirname(dir)) {
    if (manifestDir === null && existsSync(join(dir, "package.json"))) manifestDir = dir;
    if (add === null) add = LOCKFILES.find(([file]) => existsSync(join(dir, file)))?.[1] ?? null;
    if ((manifestDir !== null && add !== null) || (bounded && dir === root) || dirname(dir) === dir) break;
  }
  return { command: `${add ?? "npm install"} ${pkg}`, dir: manifestDir ?? root };
}

/**
 * The module file a resolved import path leads to, as the runtime tries it (Bun 1.4, measured): as
 * written; with an extension, in the runtime's order; a `.js`-family name that is not there, as
 * the TypeScript file it stands for (`x.js` → `x.ts`, `x.tsx`, `x.mts`; `x.mjs` → `x.mts`;
 * `x.cjs` → `x.cts`: TypeScript's way of naming an import); else a folder's index file, in the
 * same order. Null when none is a file.
 */
export function existingModule(path: string): string | null {
  const written = path.match(/^(.*)\.(js|jsx|mjs|cjs)$/);
  const typescript = written === null ? [] : (TYPESCRIPT_FOR[written[2]!] ?? []).map((extension) => `${written[1]}${extension}`);
  const file = [path, ...MODULE_EXTENSIONS.map((extension) => `${path}${extension}`), ...typescript].find(isFileNow);
  if (file !== undefined) return file;
  // A folder: the file its package.json "main" names, as the runtime takes it, else its index.
  const main = folderMain(path);
  const inFolder = main === null ? [] : [main, ...MODULE_EXTENSIONS.map((extension) => `${main}${extension}`), ...MODULE_EXTENSIONS.map((extension) => `${main}/index${extension}`)];
  return [...inFolder, ...MODULE_EXTENSIONS.map((extension) => `${path}/index${extension}`)].find(isFileNow) ?? null;
}

/** The path a folder's package.json "main" names, or null (no package.json, no "main"). */
function folderMain(dir: string): string | null {
  const main = readConfigJson(join(dir, "package.json"))?.main;
  return typeof main === "string" && main !== "" ? join(dir, main) : null;
}

/** The extensions the runtime tries for a module named without one, in its order (Bun 1.4, measured). */
export const MODULE_EXTENSIONS = [".tsx", ".jsx", ".mts", ".ts", ".mjs", ".js", ".cts", ".cjs", ".json"];

/** What the runtime tries for a `.js`-family name that is not there, in its order (Bun 1.4, measured). */
const TYPESCRIPT_FOR: Record<string, string[]> = { js: [".ts", ".tsx", ".mts"], jsx: [".ts", ".tsx", ".mts"], mjs: [".mts"], cjs: [".cts"] };

function isFileNow(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The folder of `pkg` in a `node_modules` above `fromDir`, when one holds it. */
export function installedPackageDir(pkg: string, fromDir: string): string | null {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", pkg);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

/**
 * How a load error says that only a new process loads the file (the runtime keeps what it
 * resolved): unknown-capability.ts reads it to suggest that, not a save of the file.
 */
export const RESTART_TO_LOAD = "Restart `docket serve` (or `docket mcp`)";

/**
 * Explains an import that named a package which could not be resolved from `importer`. Three
 * cases a user acts on differently: a subpath of a module docket serves, a package that is not
 * installed (the command that installs it), and a package that is installed but does not export
 * what was asked for.
 */
export function explainUnresolvedPackage(specifier: string, importer: string, runtimeMessage: string, importerText?: string): string | null {
  // An alias is no package: "npm install #lib" or "npm install @lib/q" would be nonsense.
  const alias = aliasTargets(specifier, dirname(importer));
  const found = alias.targets.map(existingModule).find((path) => path !== null);
  if (found) {
    const configs = alias.configs.map((config) => basename(config)).join(" and ");
    // The file is there and the mapping names it: the runtime read the config before the mapping
    // (it reads tsconfig.json and package.json "imports" once per process)…
    if (changedSince(processStartedMs(), alias.configs)) {
      return `cannot resolve import ${JSON.stringify(specifier)}: ${configs} maps it to ${JSON.stringify(found)}, which exists, but the mapping is newer than this process, which read ${configs} when it first needed it and keeps what it read. ${RESTART_TO_LOAD} to use it.`;
    }
    // …or, older than this process, the runtime does not read it where TypeScript does (a
    // `paths` inherited through an "extends" list): a restart would not help.
    const own = nearestTsconfig(dirname(importer));
    return `cannot resolve import ${JSON.stringify(specifier)}: ${configs} maps it to ${JSON.stringify(found)}, which exists, but the runtime does not resolve it from there (it reads the "paths" of the nearest tsconfig.json and of one config it extends by a single name, not an "extends" list). Add the alias to the compilerOptions.paths of ${own === null ? "the tsconfig.json nearest this file" : relative(findCheckoutRoot(dirname(importer)), own) || own} itself.`;
  }
  if (alias.targets.length > 0) {
    return `cannot resolve import ${JSON.stringify(specifier)}: ${alias.configs.map((config) => basename(config)).join(" and ")} ${alias.configs.length > 1 ? "map" : "maps"} it to ${alias.targets.map((target) => JSON.stringify(target)).join(" or ")}, and no such file exists. Create it, or correct the import or the alias.`;
  }
  const fromDir = dirname(importer);
  const own = nearestTsconfig(fromDir);
  const root = findCheckoutRoot(fromDir);
  const shown = (path: string) => relative(root, path) || path;
  const outer = outerAlias(specifier, fromDir);
  if (outer !== null && own !== null) {
    // The checkout's root tsconfig.json maps it, but capabilities/tsconfig.json is the one read for this file.
    const entry = `${JSON.stringify(outer.pattern)}: [${outer.targets.map((target) => JSON.stringify(targetFrom(dirname(own), target))).join(", ")}]`;
    return `cannot resolve import ${JSON.stringify(specifier)}: ${shown(outer.config)} maps ${JSON.stringify(outer.pattern)}, but the tsconfig.json of this file is ${shown(own)}, and TypeScript and the runtime read only the nearest one's "paths" (an "extends" does not add them either). Add ${entry} to the compilerOptions.paths of ${shown(own)}.`;
  }
  if (specifier.startsWith("#")) {
    // An entry naming another entry (`"#a": "#dep"`), which nothing follows.
    const chained = alias.packages.find((name) => name.startsWith("#"));
    if (chained !== undefined) return `cannot resolve import ${JSON.stringify(specifier)}: the "imports" of the nearest package.json map it to ${JSON.stringify(chained)}, another "imports" name, which the runtime does not follow (an entry leads to a file, "./…", or a package). Map it to what ${JSON.stringify(chained)} leads to.`;
    // An entry naming a package (`"#dep": "ms"`): what stops the import is that package.
    const named = alias.packages[0];
    const inner = named === undefined ? null : explainUnresolvedPackage(named, importer, runtimeMessage.replaceAll(`'${specifier}'`, `'${named}'`), importerText);
    if (named !== undefined && inner !== null) return `cannot resolve import ${JSON.stringify(specifier)}: the "imports" of the nearest package.json map it to the package ${JSON.stringify(named)}, and ${inner.replace(/^cannot resolve import "[^"]*": /, "")}`;
    return `cannot resolve import ${JSON.stringify(specifier)}: a name starting with # is a package.json "imports" entry, and no "imports" entry of the nearest package.json matches it. Add one (like "#lib/*": "./lib/*"), or import the file by its relative path.`;
  }
  const pkg = packageOf(specifier);
  if (pkg === null) {
    if (specifier.startsWith("@/") || specifier.startsWith("~")) {
      return `cannot resolve import ${JSON.stringify(specifier)}: it names no package, and no tsconfig.json "paths" alias matches it. Add one to the compilerOptions.paths of ${own === null ? "a tsconfig.json above this file" : shown(own)} (like ${JSON.stringify(`${specifier.split("/")[0]}/*`)}: ["../src/*"]), or import the file by its relative path.`;
    }
    return null;
  }
  if ((SERVED_MODULES as readonly string[]).includes(pkg)) {
    return `cannot resolve import ${JSON.stringify(specifier)}: docket serves "${pkg}" itself, as one module; import it as "${pkg}", not a path inside it.`;
  }
  const installed = installedPackageDir(pkg, fromDir);
  if (installed !== null) {
    const subpath = specifier.slice(pkg.length);
    const entry = packageEntry(installed, subpath);
    const wanted = subpath === "" ? "its main module" : JSON.stringify(`.${subpath}`);
    if (entry !== null && "missing" in entry) {
      // The runtime words a missing subpath (or an unbuilt package) as a missing package: the
      // package is there, what it should give is not.
      return `cannot resolve import ${JSON.stringify(specifier)}: the package "${pkg}" is installed (${installed}) but does not provide ${wanted}: ${entry.missing}. ${entry.fix}`;
    }
    // The runtime's words for it: an import's (`Cannot find package`) or a require's (`Cannot find module`).
    const notFound = runtimeMessage.includes(`Cannot find package '${pkg}'`) || runtimeMessage.includes(`Cannot find module '${pkg}'`);
    if (notFound && changedSince(processStartedMs(), entry === null ? [installed] : [installed, entry.file, dirname(entry.file)])) {
      // On disk now, yet the runtime did not find it: installed (or built) after this process first
      // looked for it, and the runtime keeps the failed resolution for its lifetime.
      return `cannot resolve import ${JSON.stringify(specifier)}: the package "${pkg}" is installed now (${installed}), but it was installed after docket started (or built or changed since), and the runtime keeps what it resolved (or failed to) until the process ends. ${RESTART_TO_LOAD} to load it.`;
    }
    return `cannot resolve import ${JSON.stringify(specifier)}: the package "${pkg}" is installed (${installed}) but does not provide it: ${runtimeMessage}. Check the path against the package's "exports".`;
  }
  // The runtime stops at the first package it cannot find: the others this file imports are named
  // too, so that one install brings them all (not one round of install and retry per package).
  const others = (importerText === undefined ? [] : missingPackagesOf(importerText, fromDir)).filter((other) => other !== pkg);
  const advice = installAdvice([pkg, ...others].join(" "), fromDir);
  const also = others.length === 0 ? "" : `, nor ${others.map((other) => JSON.stringify(other)).join(", ")}, which this file imports too`;
  return `cannot resolve import ${JSON.stringify(specifier)}: the package "${pkg}" is not installed${also}. Install ${others.length === 0 ? "it" : "them"} with \`${advice.command}\` in ${advice.dir}.`;
}

/**
 * Whether any of `paths` was created or changed after `since`: a package's folder (an install
 * writes it anew; a link to it counts by its own time too), the file the import resolves to and
 * its folder (a build writes dist/ anew). Not the node_modules above: any other install changes it.
 */
function changedSince(since: number, paths: string[]): boolean {
  return paths.some((path) => {
    try {
      return Math.max(lstatSync(path).mtimeMs, statSync(path).mtimeMs) > since;
    } catch {
      // Gone since: nothing to compare.
      return false;
    }
  });
}

/** `import … from "x"`, `import "x"`, `export … from "x"` and `import("x")` of a module's text. */
const IMPORTED = /\b(?:import|export)\s[^'"`;]*?\bfrom\s*(['"])([^'"]+)\1|\bimport\s*(['"])([^'"]+)\3|\bimport\(\s*(['"])([^'"]+)\5\s*\)/g;

/**
 * The packages a module's text imports that are not installed where a module in `fromDir` would
 * find them (not served by docket, not a runtime module, not an alias), in the order it imports them.
 */
export function missingPackagesOf(text: string, fromDir: string): string[] {
  const missing = new Set<string>();
  for (const match of text.matchAll(IMPORTED)) {
    const imported = match[2] ?? match[4] ?? match[6]!;
    // An "imports" entry stands for the package it names (`"#dep": "ms"`).
    for (const specifier of imported.startsWith("#") ? aliasTargets(imported, fromDir).packages : [imported]) {
      const pkg = packageOf(specifier);
      if (pkg === null || missing.has(pkg) || (SERVED_MODULES as readonly string[]).includes(pkg) || pkg === "bun" || builtinModules.includes(pkg)) continue;
      if (aliasTargets(specifier, fromDir).targets.length > 0 || installedPackageDir(pkg, fromDir) !== null) continue;
      missing.add(pkg);
    }
  }
  return [...missing];
}


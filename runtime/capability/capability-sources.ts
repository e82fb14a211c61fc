// What a capability is made of: its file and every local module it imports, read once. Each
// thread imports this very text (pinned-sources.ts), and the capability's version is its digest,
// so a helper edited after docket read it can neither run unseen nor leave a stale module behind
// (docs/authoring.md, "Versions"; docs/containment.md, "Loading").

import { createHash } from "node:crypto";
import { lstatSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { compileOptionsOf } from "./compile-options.ts";
import { caseTwins } from "./_case-twin.ts";
import { importedAsDataOnly, rewriteByPattern, rewriteSpecifiers, specifierUses, type ImportUse } from "./_specifier-rewrite.ts";
import { dataProblem, importKinds, type DataKind } from "./data-imports.ts";
import { unpinnableImport, type UnpinnableImport } from "./_unpinnable-import.ts";
import { CapabilityError } from "./capability-error.ts";
import { installedPackageDir, MODULE_EXTENSIONS, packageOf, RESTART_TO_LOAD } from "./_missing-package.ts";
import { aliasTargets, extendsChain, type ImportKind } from "./alias-targets.ts";
import { configDoesNotParse, configParseError } from "./config-file.ts";
import { aliasLeadsNow, noteAliasConfigs, staleAliasConfigs } from "./_alias-configs-read.ts";
import { resolveFresh } from "./_fresh-resolve.ts";
import { realOrSelf } from "./real-path.ts";
import { readRegularFileText } from "./open-regular-file.ts";

/**
 * An import of a local module, as written (`./_helper.ts`), and where it resolves. `missing`:
 * it resolved to nothing (or could not be read) when docket read the capability, and `path` is
 * where it would be: the import is served as missing, so that no thread imports a text of it
 * written later, that no trial saw. `data`: the file is imported as data (JSON, or text), not run.
 */
export interface LocalImport {
  specifier: string;
  path: string;
  missing?: true;
  data?: DataKind;
  /** Imported by `require()` too (a JSON file's value must then be an object). */
  required?: true;
}

/** One module of a capability's source: where it is, the text read, the local modules it imports. */
export interface SourceModule {
  path: string;
  text: string;
  imports: LocalImport[];
  /** The digest of this module and everything it imports, local: one module instance per such whole. */
  key: string;
  /** The text served for it: its local imports name their pinned specifiers. */
  served: string;
  /** Imported as data (a JSON file, or a file imported `with { type: "text" }`): its text is its value, and it imports nothing. */
  data?: DataKind;
  /**
   * The specifiers its served text names literally and leaves as written (packages, imports with
   * other attributes, `require.resolve("./x.ts")`): what it may ask the runtime for other than its
   * pinned imports (adapter/bun-modules.ts refuses the rest when they lead to a local script).
   */
  literals?: string[];
  /** The specifiers of its `import`/`export … from` statements, as the runtime reads them (undefined without a scanner). */
  staticImports?: string[];
}

/** A capability file's source as read once: the file first, then every local module it reaches. */
export interface CapabilitySources {
  file: string;
  text: string;
  /** `sha256:…` of the file alone when it imports no local module, else of every module's path and text. */
  version: string;
  modules: SourceModule[];
  /** A CommonJS file: imported as it is on disk, with what it requires (it cannot be served pinned). */
  commonJs: boolean;
}

/** What docket needs of the runtime to find a module's imports (Bun's transpiler and resolver; adapter/bun-modules.ts). */
export interface ImportScanner {
  /** The specifiers of `import` and `export … from` statements, literal `import()` and `require()`; null when the text does not parse. */
  specifiers(text: string, path: string): string[] | null;
  /** Where `specifier` resolves from the folder `fromDir`, or null when it does not. */
  resolve(specifier: string, fromDir: string): string | null;
  /** Whether the text has `import` or `export` statements, as the runtime parses it; null when it does not parse. */
  esModule(text: string, path: string): boolean | null;
  /** The specifiers of `import` and `export … from` statements alone: what loads with the module, none optional (a `require` or `import()` may sit in a try). */
  staticImports?(text: string, path: string): string[] | null;
}

/** How many local modules one capability may import (itself not counted): past it, the file is a load error. */
export const MAX_SOURCE_MODULES = 500;
/** How many bytes of text they may hold together (the capability file included). */
export const MAX_SOURCE_BYTES = 32 * 1024 * 1024;

/** Where a module is imported with exactly the text of `key` (a digest, or MISSING); as data, with its kind. */
export function pinnedSpecifier(path: string, key: string, data?: DataKind): string {
  return `${path}${PIN_MARK}${key.replace(/^sha256:/, "")}${data === undefined ? "" : `${DATA_MARK}${data}`}`;
}

export const PIN_MARK = "?docket_pin=";
/** After a pinned specifier's key: the module is data of this kind (json, text), served as its value. */
export const DATA_MARK = "&docket_data=";

/** A module's place in a source: a file imported both as code and as text is two modules. */
function moduleId(path: string, data: DataKind | undefined): string {
  return data === undefined ? path : `${path}\0${data}`;
}

/** The key of a local module that was missing when docket read the capability. */
export const MISSING = "missing";

/** Script files docket serves pinned as code; others are data (data-imports.ts), or the runtime's to read. */
const PINNABLE = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

/**
 * Reads the local modules `text` of `file` imports, and theirs, once each: relative or absolute
 * specifiers (`./_helper.ts`, `../lib/format`) of script files outside node_modules, in `import`,
 * `export … from`, literal `import()` and `require()`, and the data files they import (JSON,
 * text: data-imports.ts). With no scanner (no module plugin in this runtime) or for a CommonJS
 * file, the file alone: imported as it is on disk.
 *
 * A local module that cannot be found or read is served as missing, whatever is written there
 * later. One that is not a regular file (a FIFO, a device, even named `.json`) is refused, since
 * the runtime's read of it would block or never end; so is a CommonJS one (it cannot be served
 * pinned), and an import written in a way docket does not rewrite: a thread could otherwise run a
 * text of it that no trial saw.
 */
export async function readCapabilitySources(file: string, text: string, scanner: ImportScanner | null, looksCommonJs: (text: string) => boolean): Promise<CapabilitySources> {
  // The runtime reads the alias configs of the file's folder as it imports the file, if not before.
  noteAliasConfigs(dirname(file), () => dirname(realOrSelf(file)));
  const root: SourceModule = { path: file, text, imports: [], key: "", served: text };
  const modules = new Map<string, SourceModule>([[file, root]]);
  // What the runtime parses as an ES module is one, whatever words a quick look finds in it.
  const isCommonJs = (source: string, path: string) => scanner?.esModule(source, path) !== true && looksCommonJs(source);
  const commonJs = isCommonJs(text, file);
  if (scanner !== null && !commonJs) {
    let bytes = Buffer.byteLength(text);
    const twinsIn = new Map<string, Map<string, string>>();
    const queue = [root];
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      for (const local of localImports(next, scanner)) {
        const id = moduleId(local.path, local.data);
        const readAlready = modules.get(id);
        if (local.missing || readAlready !== undefined) {
          // Data read already may be required here where it was imported there.
          if (readAlready?.data !== undefined) checkData(local, readAlready.text, next.path, file);
          next.imports.push(local);
          continue;
        }
        const twin = caseTwinIn(local.path, twinsIn);
        if (twin !== null) {
          throw new CapabilityError("invalid_input", `${local.path} (imported by ${describeImporter(next.path, file)} as ${JSON.stringify(local.specifier)}) and ${twin} beside it differ only by letter case, and Bun cannot load two such files apart (it resolves an import of either to one of them, and an edit of the other goes unseen), so the capability is not loaded; rename or remove one of them`);
        }
        const size = sizeOf(local.path);
        if (modules.size > MAX_SOURCE_MODULES || bytes + size > MAX_SOURCE_BYTES) {
          throw new CapabilityError("invalid_input", `${file} imports more than ${MAX_SOURCE_MODULES} local modules or ${MAX_SOURCE_BYTES / 1024 / 1024} MiB of them; docket reads every local module a capability imports, so keep a capability's own code smaller, or put shared code in a package`);
        }
        const helper = await readHelper(local.path, next.path, file);
        if (helper === null) {
          next.imports.push({ ...local, missing: true });
          continue;
        }
        if (local.data !== undefined) checkData(local, helper, next.path, file);
        else if (isCommonJs(helper, local.path)) {
          throw new CapabilityError("invalid_input", `${local.path} (imported by ${describeImporter(next.path, file)}) is CommonJS (module.exports, require): docket serves a capability's local modules pinned to the text it read and tried, which it can do for ES modules only; write it with export, or put it in a package`);
        }
        bytes += Buffer.byteLength(helper);
        const module: SourceModule = { path: local.path, text: helper, imports: [], key: "", served: helper, data: local.data };
        modules.set(id, module);
        // Data imports nothing: its text is its value.
        if (local.data === undefined) queue.push(module);
        next.imports.push(local);
      }
    }
  }
  const all = [...modules.values()];
  for (const module of all) module.key = digestOf(reachable(module, modules));
  if (scanner !== null) {
    for (const module of all) {
      if (module.data !== undefined) continue;
      module.served = servedText(module, modules, scanner, file);
      module.literals = literalsOf(module, scanner);
      module.staticImports = scanner.staticImports?.(module.text, module.path) ?? undefined;
    }
  }
  return { file, text, version: root.key, modules: all, commonJs };
}

/**
 * The local imports of one module, resolved as the runtime would: each specifier once as code and
 * once as each kind of data it is imported as (`import t from "./_h.ts" with { type: "text" }`
 * beside `import { h } from "./_h.ts"`).
 */
function localImports(module: SourceModule, scanner: ImportScanner): LocalImport[] {
  const found = new Map<string, LocalImport>();
  // From the folder the module really is in: the runtime resolves a linked file from its target's.
  const fromDir = dirname(realOrSelf(module.path));
  // The runtime reads that folder's alias configs as it imports the module, if not before: a
  // helper's folder too, not only the capability file's (checking tester).
  noteAliasConfigs(fromDir);
  const uses = usesOf(module);
  for (const specifier of scanned(module.path, module.text, scanner).specifiers ?? []) {
    if (found.has(specifier) || found.has(`${specifier}\0json`) || found.has(`${specifier}\0text`)) continue;
    let resolved: string | null;
    if (!/^\.{0,2}\//.test(specifier)) {
      // A name: local only through an alias, and then a script or data like a path's.
      // Imported by require() alone, package.json "imports" conditions are require's.
      const used = uses.get(specifier);
      resolved = aliasedLocal(specifier, fromDir, scanner, used !== undefined && used.size > 0 && [...used].every((use) => use === "require") ? "require" : "import");
      if (resolved === null) continue;
    } else {
      resolved = scanner.resolve(specifier, fromDir)?.replace(/\?.*$/, "") ?? null;
      // Not there now: served as missing, whatever is written there before a thread asks.
      if (resolved === null) {
        found.set(specifier, { specifier, path: resolve(fromDir, specifier.replace(/\?.*$/, "")), missing: true });
        continue;
      }
      resolved = linkedNow(specifier, fromDir, resolved);
      if (resolved.includes("/node_modules/")) continue;
    }
    // A specifier this reading of the text did not find in place is code, unless written with attributes only.
    const used = uses.get(specifier) ?? new Set<ImportUse>([importedAsDataOnly(module.text, specifier) ? "type:?" : "import"]);
    const { code, data } = importKinds(resolved, used);
    for (const kind of data) found.set(`${specifier}\0${kind}`, { specifier, path: resolved, data: kind, ...(used.has("require") ? { required: true as const } : {}) });
    // Other data (TOML, a file imported as a file) is the runtime's to read — unless it is no regular file: read here, it is refused.
    if (code && (PINNABLE.test(resolved) || !isRegularFile(resolved))) found.set(specifier, { specifier, path: resolved });
    else if (!code && data.length === 0 && !isRegularFile(resolved)) found.set(specifier, { specifier, path: resolved });
  }
  return [...found.values()];
}

/**
 * Where a relative import leads now when the file it names is a symbolic link, or sits in a
 * folder reached through one (`cur -> v1`): the runtime keeps where a link led the first time it
 * resolved it, for the life of the process, so a link re-pointed since (`ln -sfn b.ts _s.ts`,
 * `ln -sfn v2 cur`) would still give the old target — read, pinned and versioned in the new one's
 * place. The links are read again; any other file is where the runtime said.
 */
function linkedNow(specifier: string, fromDir: string, resolved: string): string {
  const written = resolve(fromDir, specifier.replace(/\?.*$/, ""));
  for (const candidate of [written, ...MODULE_EXTENSIONS.map((extension) => `${written}${extension}`)]) {
    try {
      lstatSync(candidate);
    } catch {
      continue;
    }
    // A link to a folder (its index file), or to nothing, is left to the runtime.
    const target = realOrSelf(candidate);
    return target !== candidate && !isFolder(target) ? target : resolved;
  }
  return resolved;
}

/** The entry beside `path` whose name differs from its own only by letter case (_case-twin.ts), or null; each folder listed once per read. */
function caseTwinIn(path: string, listed: Map<string, Map<string, string>>): string | null {
  const folder = dirname(path);
  let twins = listed.get(folder);
  if (twins === undefined) {
    try {
      twins = caseTwins(readdirSync(folder));
    } catch {
      twins = new Map();
    }
    listed.set(folder, twins);
  }
  const twin = twins.get(basename(path));
  return twin === undefined ? null : join(folder, twin);
}

/** Refuses data that cannot be served as the import asks (data-imports.ts), by name; judged once per text. */
function checkData(local: LocalImport, text: string, importer: string, file: string): void {
  const entry = entryOf(`${local.path}\0${local.data}${local.required ? "\0require" : ""}`, text);
  if (entry.dataProblem === undefined) entry.dataProblem = dataProblem(local.data!, text, local.required === true);
  if (entry.dataProblem !== null) throw new CapabilityError("invalid_input", `${local.path} (imported by ${describeImporter(importer, file)}) ${entry.dataProblem}`);
}

/** How a module uses each specifier it imports, read once per text. */
function usesOf(module: SourceModule): Map<string, Set<ImportUse>> {
  const entry = entryOf(module.path, module.text);
  return (entry.uses ??= specifierUses(module.text));
}

/**
 * Where a name (not a path) leads to a file of the module's own project, or null: a tsconfig
 * `paths` alias (`@/format`, `@lib/*` → `../lib/*`, or a name under its `baseUrl`) or a
 * package.json `"imports"` entry (`#lib/x`, `#cfg` → `./settings.json`) that leads outside
 * node_modules — a script, or data (JSON, text) read and served like data imported by its path.
 * A package resolves into node_modules, or to Bun's install cache when it is not installed, or — a
 * workspace package npm linked into node_modules — to its own folder: none of them is an alias,
 * whatever configs were written since (hostile tester, session 38). Which config file the alias
 * came from does not matter: `docket init` puts a tsconfig.json in capabilities/ while package.json
 * "imports" sit at the root.
 *
 * Where an alias leads is docket's reading of the configs on disk now (alias-targets.ts, in the
 * runtime's order), not the runtime's: the runtime reads each config once for the life of the
 * process (every thread), so it would keep resolving an alias whose config changed the old way.
 * Every local import is served pinned to the file docket names, so a changed alias reloads its
 * importers as an edited helper does (docs/authoring.md, "Live reload").
 */
function aliasedLocal(specifier: string, fromDir: string, scanner: ImportScanner, kind: ImportKind): string | null {
  // docket serves these two itself (adapter/bun-modules.ts), whatever a resolver would find.
  if (specifier === "docket" || specifier === "valibot" || specifier.startsWith("valibot/")) return null;
  // The configs first, as the runtime reads them (`paths` before node_modules), but as they are on
  // disk now: the runtime's own answer may come from a reading older than an edit.
  const now = aliasLeadsNow(specifier, fromDir, kind);
  // Where this process's runtime resolves it (its folder listings asked again: _fresh-resolve.ts).
  const runtimeResolves = () => resolveFresh(specifier, fromDir, (name, dir) => scanner.resolve(name, dir))?.replace(/\?.*$/, "") ?? null;
  if (now !== null) {
    // Into node_modules (vendored code mapped by `paths`): a package's file, the runtime's to import
    // — unless the runtime still leads the name elsewhere, as the configs did when it first read them.
    if (/\/node_modules\//.test(now)) {
      const runtime = runtimeResolves();
      if (runtime !== null && runtime.startsWith("/") && realOrSelf(runtime) !== realOrSelf(now)) refuseRuntimeMapping(specifier, fromDir, `it maps it to ${JSON.stringify(now)} now, a file of a package, which the runtime imports itself`);
      return null;
    }
    // The file itself (existingModule finds only files), its links read now (a `cur -> v1` folder re-pointed): as linkedNow does for a path.
    return realOrSelf(now);
  }
  const resolved = runtimeResolves();
  if (resolved === null || !resolved.startsWith("/") || /\/node_modules\/|\/\.bun\/install\/cache\//.test(resolved)) return null;
  // `#…` names only a package.json "imports" entry; any other name may also be a package's. A
  // package's name that climbs out of its folder (`ms/../../lib/x.ts`) names a file of the project.
  const pkg = specifier.startsWith("#") ? null : packageOf(specifier);
  const dir = pkg === null ? null : installedPackageDir(pkg, fromDir);
  if (dir !== null && insideFolder(realOrSelf(resolved), realOrSelf(dir))) return null;
  // No config leads it to a file now: the runtime's answer, unless that is a mapping it kept from
  // before (a new process may resolve the name as a package).
  refuseMappingGone(specifier, fromDir);
  return resolved;
}

/**
 * An alias the runtime still resolves to a file, where the configs on disk lead it to none now:
 * a load error saying to restart, naming the configs changed since this thread first read them.
 * Resolved the old way, it would be a version of the capability other than a new process loads.
 */
function refuseMappingGone(specifier: string, fromDir: string): void {
  if (staleAliasConfigs(specifier, fromDir).length > 0) refuseRuntimeMapping(specifier, fromDir, "it no longer maps it to a file");
}

/**
 * The load error of an import the runtime resolves as configs mapped it when it first read them,
 * where the configs on disk now say otherwise (`now`) and docket cannot serve it pinned itself.
 */
function refuseRuntimeMapping(specifier: string, fromDir: string, now: string): never {
  const stale = staleAliasConfigs(specifier, fromDir);
  const changed = stale.length > 0 ? stale : aliasTargets(specifier, fromDir).configs;
  // A config that does not parse (saved half-edited) is what to correct, not a reason to restart (alias tester, session 39).
  const broken = changed.flatMap((config) => (basename(config) === "tsconfig.json" ? extendsChain(config).map((link) => link.file).concat(config) : [config])).find(configDoesNotParse);
  if (broken !== undefined) {
    const words = configParseError(broken);
    throw new CapabilityError("invalid_input", `cannot resolve import ${JSON.stringify(specifier)}: ${relativeToFolder(fromDir, broken)} does not parse as JSON (comments and trailing commas are allowed)${words === null ? "" : `: ${words}`}, so where the import leads cannot be read; correct it, and docket reads it again once it is saved.`);
  }
  // A tsconfig.json that extends others may have changed through them (an edited tsconfig.base.json).
  const named = changed.map((config) => `${relativeToFolder(fromDir, config)}${basename(config) === "tsconfig.json" && extendsChain(config).length > 1 ? " (or a config it extends)" : ""}`).join(" and ") || "its alias configs";
  throw new CapabilityError("invalid_input", `cannot resolve import ${JSON.stringify(specifier)}: ${named} ${changed.length > 1 ? "were" : "was"} created, changed or removed after this process first read ${changed.length > 1 ? "them" : "it"} (${now}), and the runtime keeps the mapping it read first. ${RESTART_TO_LOAD} to use it.`);
}

/** A config's path as seen from the folder of the module importing through it: `tsconfig.json`, `../package.json`. */
function relativeToFolder(fromDir: string, config: string): string {
  const path = relative(fromDir, config);
  // A config of the importer's own folder is named with that folder (`capabilities/tsconfig.json`): a checkout has a tsconfig.json at its root too.
  return dirname(path) === "." ? join(basename(fromDir), basename(config)) : path;
}

/**
 * A module's text with each local import naming its pinned specifier (a missing one, the missing
 * marker the module plugin serves as an error). An import the rewrite did not reach — written in
 * a way it does not recognise — is refused: imported from disk, it could run unseen.
 */
function servedText(module: SourceModule, modules: Map<string, SourceModule>, scanner: ImportScanner, file: string): string {
  // Read once per text, like the scan: a helper many capabilities import is not read again for each.
  const entry = entryOf(module.path, module.text);
  if (entry.unpinnable === undefined) entry.unpinnable = unpinnableImport(module.text);
  const unpinnable = entry.unpinnable;
  if (unpinnable?.kind === "computed") {
    throw new CapabilityError("invalid_input", `docket cannot pin the import of ${unpinnable.written} in ${describeImporter(module.path, file)}: the name of a local module computed at run time is only known then, so the module would be imported from disk as it is at that moment — not the text docket read and tried, and not counted in the capability's version; import each module by its name (import * as a from "./_rules/a.ts", …) and choose among them in code`);
  }
  if (unpinnable?.kind === "created-require") {
    const instead = /^["'`]/.test(unpinnable.written) ? `import it instead (import … from ${unpinnable.written})` : "import each module by its name instead (import * as a from \"./_rules/a.ts\", …)";
    throw new CapabilityError("invalid_input", `docket cannot pin ${unpinnable.written}, loaded at line ${unpinnable.line} of ${describeImporter(module.path, file)} by a require made with createRequire: the runtime reads that module from disk when the line runs, so it would not be the text docket read and tried, nor counted in the capability's version, nor watched for edits; ${instead}, the module written with export (an ES module), not module.exports`);
  }
  if (module.imports.length === 0) return module.text;
  // By specifier and how it is imported: as code (or missing, however imported), as json, as text.
  const pinned = new Map<string, string>();
  for (const local of module.imports) {
    const target = local.missing ? pinnedSpecifier(local.path, MISSING) : pinnedSpecifier(local.path, modules.get(moduleId(local.path, local.data))!.key, local.data);
    pinned.set(local.missing ? local.specifier : `${local.specifier}\0${local.data ?? ""}`, target);
  }
  const targetOf = (specifier: string, use: ImportUse) => {
    const missing = pinned.get(specifier);
    if (missing !== undefined) return use === "import" || use === "require" || use === "type:text" || use === "type:json" ? missing : undefined;
    if (use === "type:text" || use === "type:json") return pinned.get(`${specifier}\0${use.slice(5)}`);
    if (use === "import" || use === "require") return pinned.get(`${specifier}\0`) ?? pinned.get(`${specifier}\0json`) ?? pinned.get(`${specifier}\0text`);
    return undefined;
  };
  const targets = new Map(module.imports.map((local) => [local.specifier, targetOf(local.specifier, "import")]).filter((pair): pair is [string, string] => pair[1] !== undefined));
  const first = rewriteSpecifiers(module.text, targetOf);
  // An import with other attributes (`with { type: "file" }`) reads the file as the runtime does: left as written.
  const missedIn = (text: string) => {
    const specifiers = scanned(`${module.path}${PIN_MARK}`, text, scanner, module.path).specifiers;
    // The served text must parse as the file did: a rewrite that broke it is refused too.
    if (specifiers === null) return module.imports.map((local) => local.specifier);
    return specifiers.filter((specifier) => module.imports.some((local) => local.specifier === specifier) && !first.withAttributes.has(specifier));
  };
  let served = first.text;
  let missedAll = missedIn(served);
  if (missedAll.length > 0) {
    served = rewriteByPattern(served, targets, new Set(missedAll));
    missedAll = missedIn(served);
  }
  const missed = missedAll[0];
  if (missed !== undefined) {
    throw new CapabilityError("invalid_input", `docket cannot pin the import of ${JSON.stringify(missed)} in ${describeImporter(module.path, file)} as it is written (an escaped specifier, or code around it docket does not read); write it plainly, import … from ${JSON.stringify(missed)}, so that every thread runs the text docket read and tried`);
  }
  return served;
}

/**
 * The specifiers a module's served text still names as written (its pinned imports name their
 * pinned specifiers instead), and the literal arguments of a `.resolve(…)`: a path asked for, not
 * loaded. Read from the scan servedText made (or the text's own, when nothing was rewritten).
 */
function literalsOf(module: SourceModule, scanner: ImportScanner): string[] {
  const rewritten = module.served !== module.text;
  const specifiers = scanned(rewritten ? `${module.path}${PIN_MARK}` : module.path, module.served, scanner, module.path).specifiers ?? [];
  const literals = new Set(specifiers.filter((specifier) => !specifier.includes(PIN_MARK)));
  for (const match of module.text.matchAll(RESOLVE_LITERAL)) literals.add(match[2]!);
  return [...literals];
}

/** `require.resolve("./x.ts")`, `req.resolve('../lib/x')`: a literal path resolved, not loaded. */
const RESOLVE_LITERAL = /\.resolve\s*\(\s*(["'`])([^"'`\n$]+)\1/g;

function describeImporter(path: string, file: string): string {
  return path === file ? "the capability" : path;
}

export { realOrSelf } from "./real-path.ts";

/** Whether `file` lies inside `folder` (both real paths). */
export function insideFolder(file: string, folder: string): boolean {
  const path = relative(folder, file);
  return path !== "" && path !== ".." && !path.startsWith("../") && !isAbsolute(path);
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isRegularFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return true;
  }
}

/** A file's size before it is read (0 when unknown: the read says why). */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** A local module's text; null when it cannot be read (it is then served as missing). */
async function readHelper(path: string, importer: string, file: string): Promise<string | null> {
  try {
    return await readRegularFileText(path, { label: `${path} (imported by ${importer === file ? "the capability" : importer})` });
  } catch (error) {
    if (CapabilityError.is(error)) throw error;
    return null;
  }
}

/** Every module `from` reaches through its imports, itself included. */
function reachable(from: SourceModule, modules: Map<string, SourceModule>): SourceModule[] {
  const seen = new Set([from]);
  for (const module of seen) {
    for (const { path, missing, data } of module.imports) {
      const next = missing ? undefined : modules.get(moduleId(path, data));
      if (next) seen.add(next);
    }
  }
  return [...seen];
}

/**
 * A lone module's version is its text's (as a file that imports nothing always had); several, or
 * one compiled under options of its tsconfig.json that change what its code does: each path (and
 * data kind), text's digest and those options. `experimentalDecorators` turned on changed what a
 * file did while its version, and the module served, stayed the same (authoring tester, session 46).
 */
function digestOf(modules: SourceModule[]): string {
  const options = modules.map((module) => (module.data === undefined ? compileOptionsText(module.path) : ""));
  if (modules.length === 1 && options[0] === "") return `sha256:${digestOfText(modules[0]!.path, modules[0]!.text).slice(0, 16)}`;
  const hash = createHash("sha256");
  const ids = modules.map((module, i) => [moduleId(module.path, module.data), module, options[i]!] as const);
  for (const [id, module, compiled] of ids.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    hash.update(id).update("\0").update(digestOfText(module.path, module.text)).update("\0");
    if (compiled !== "") hash.update(compiled).update("\0");
  }
  return `sha256:${hash.digest("hex").slice(0, 16)}`;
}

/** The compile options that change what a module's code does (compile-options.ts), as text; "" when none is set. */
function compileOptionsText(path: string): string {
  const options = compileOptionsOf(path);
  return Object.keys(options).length === 0 ? "" : JSON.stringify(options);
}

/**
 * The last text of each module path this thread read, with its scan and digest: a helper that many
 * capabilities import is scanned and digested once per text, not once per capability on every
 * reload (a large shared helper held the main thread a second per reload). One entry per path.
 */
const known = new Map<string, { text: string; specifiers?: string[] | null; digest?: string; unpinnable?: UnpinnableImport | null; uses?: Map<string, Set<ImportUse>>; dataProblem?: string | null }>();

function entryOf(path: string, text: string) {
  let entry = known.get(path);
  if (entry?.text !== text) known.set(path, (entry = { text }));
  return entry;
}

function scanned(key: string, text: string, scanner: ImportScanner, path = key): { specifiers: string[] | null } {
  const entry = entryOf(key, text);
  if (entry.specifiers === undefined) entry.specifiers = scanner.specifiers(text, path);
  return { specifiers: entry.specifiers };
}

function digestOfText(path: string, text: string): string {
  const entry = entryOf(path, text);
  return (entry.digest ??= createHash("sha256").update(text).digest("hex"));
}

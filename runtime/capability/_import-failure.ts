import { compileOptionsOf, jsxRuntimeSourceOf } from "./compile-options.ts";
import { existsSync, readFileSync } from "node:fs";
import { relative, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { explainUnresolvedPackage, installAdvice, installedPackageOf, packageOf } from "./_missing-package.ts";
import { withoutImportQueries } from "./import-query.ts";
import { locateSpecifier, type SourceLocation } from "./_source-lines.ts";
import { isInDocketWords, thrownClass, UNSAID } from "../execution/thrown.ts";
import { CapabilityError } from "./capability-error.ts";

/** Where and why a capability file failed to import, as a user can act on it. */
export interface ImportFailure {
  /** What every client reads: of a value the file threw, its class only (docs/security.md). */
  reason: string;
  /**
   * The reason with what the thrown value said (its message, a thrown string), which may hold a
   * URL with its password or a path: for the server's own log and the author's terminal only.
   */
  detail?: string;
  line: number | null;
  column: number | null;
  /**
   * The failure depends on what is on disk besides the file's text (a package not installed, or
   * uninstalled, a module removed): the same text must be tried again after an install.
   */
  outside?: true;
}

/** A Bun build message's location; Bun reports it 1-based (line and column). */
interface BuildPosition {
  file?: string;
  line?: number;
  column?: number;
}

/**
 * Explains the error an import of `absPath` threw. Bun throws a `BuildMessage` for a syntax error
 * (its `position` holds file, line and column), an `AggregateError` of them for some `.js` files,
 * a `ResolveMessage` for an import it cannot find (a missing package is named with the command that
 * installs it, `text` finds the line that imports it), and the thrown value for a top-level throw,
 * whose stack frames name the file with line and column. Never includes a stack trace.
 */
export function describeImportFailure(error: unknown, absPath: string, text?: string): ImportFailure {
  try {
    const failure = describe(error, absPath, text);
    // The runtime's messages name modules by the specifier docket imported them by.
    return { ...failure, reason: withoutImportQueries(failure.reason), ...(failure.detail !== undefined ? { detail: withoutImportQueries(failure.detail) } : {}) };
  } catch {
    // A thrown Proxy or an object whose getters or toString throw: its class is all that is safe
    // to read, and a careless file must never take discovery (and the server) down with it.
    return { reason: `it threw while loading: ${thrownClass(error)}`, line: null, column: null };
  }
}


/**
 * Whether `specifier` is the JSX runtime the module's own JSX imports (`preact/jsx-dev-runtime`):
 * named by its pragma or its tsconfig.json, never by a value it computes, so said to clients
 * like an import its text writes (checking tester, session 47: "an import whose name the file computes").
 */
function isJsxRuntimeOf(specifier: string, text: string, path: string): boolean {
  const source = jsxRuntimeSourceOf(text, compileOptionsOf(path));
  return source !== null && (specifier === `${source}/jsx-runtime` || specifier === `${source}/jsx-dev-runtime`);
}

function describe(error: unknown, absPath: string, text?: string): ImportFailure {
  const file = resolve(absPath);
  const build = firstBuildMessage(error);
  if (build) return fromReadFailure(build.message, file, text) ?? fromBuildMessage(build.message, build.position, build.more, file, text);
  if (isNamed(error, "ResolveMessage")) {
    // The capability file itself, gone between its listing and its import (deleted or moved while
    // docket loaded it): said so, not as an import of docket's own module the file "computes"
    // (foundation tester, session 48: it named $bunfs/root/worker-entry.js).
    if (samePath(String((error as { specifier?: unknown }).specifier ?? ""), file) && !existsSync(file)) {
      return { reason: "the file does not exist (deleted or moved while docket loaded it)", line: null, column: null, outside: true };
    }
    const importer = String((error as { referrer?: unknown }).referrer ?? "") || file;
    const own = samePath(importer, file);
    // A helper's unresolved import is found in the helper's text (read again: this is the failure path).
    const importerText = own ? (text ?? readTextOrNothing(file)) : readTextOrNothing(withoutQuery(importer));
    const specifier = asWritten(String((error as { specifier?: unknown }).specifier ?? ""), withoutQuery(importer), importerText);
    const at = locationOf((error as { position?: BuildPosition }).position, file);
    // Bun 1.4 gives no position for an unresolved import: find the line that names it.
    const where = at.line === null && own ? (locateSpecifier(text, specifier) ?? at) : at;
    const helperLine = own ? null : locateSpecifier(importerText, specifier)?.line;
    const inOther = own ? "" : ` (imported by ${relative(dirname(file), withoutQuery(importer))}${helperLine ? ` line ${helperLine}` : ""})`;
    const reason = explainUnresolvedPackage(specifier, importer, messageOf(error), importerText) ?? `cannot resolve import ${JSON.stringify(specifier)}: ${messageOf(error)}.`;
    // A name the file computes when it runs (`await import(process.env.CONFIG_URL)`) is a value, not
    // its text: it may be a URL with its password. Quoted in the log only.
    if (importerText === undefined || (!importerText.includes(specifier) && !isJsxRuntimeOf(specifier, importerText, withoutQuery(importer)))) {
      return { reason: `cannot resolve an import whose name the file computes when it runs${inOther}${UNSAID}`, detail: `${reason}${inOther}`, ...where, outside: true };
    }
    return { reason: `${reason}${inOther}`, ...where, outside: true };
  }
  if (error instanceof Error) {
    // A local module gone when docket read the capability (deleted, moved: served as missing): the
    // line that imports it, as an unresolved import is said (walkthrough tester, session 40).
    const gone = /^Cannot find module ("[^"]+"): it did not exist, or could not be read, when docket read the capability/.exec(error.message);
    if (gone) {
      const path = JSON.parse(gone[1]!) as string;
      const imported = importOf(path, file, text);
      if (imported) return { reason: `cannot resolve import ${JSON.stringify(imported.specifier)}: there is no file ${relative(dirname(file), path)} (deleted or moved?), or it could not be read; put it back or correct the import, and docket reads the capability again once either is saved.`, line: imported.line, column: imported.column };
    }
    // A name a module does not export (`import { capabilty } from "docket"`) is the runtime's link
    // error, before any code of the file ran: said whole, at the line that imports that module, be
    // it a local one, docket's, a node built-in or a package's (authoring tester, session 41).
    // Said only when an import of the file's own text names that export from that module: a
    // SyntaxError the file threw itself with such a message (its stack wiped), or a link error of a
    // module it built at run time, may carry a secret (checking tester, session 41).
    const missing = missingExportOf(error);
    const imported = missing === null ? null : importNaming(missing.module, missing.name, file, text ?? readTextOrNothing(file));
    if (imported) return { reason: `it threw while loading: ${error.name}: ${error.message}`, ...imported };
    const at = frameIn(error, file);
    const kind = error.name && error.name !== "Error" ? `${error.name}: ` : "";
    // Thrown by a module the file imports: say which, and where.
    const other = at.line === null ? innermostLocalFrame(error) : null;
    const where = other ? ` (in ${relative(dirname(file), other.path)} line ${other.line})` : "";
    const said = `it threw while loading: ${kind}${error.message}${where}`;
    // As of a handler (docs/security.md): a CapabilityError's text is written to be read (docket's
    // own refusals while loading are ones too); anything else thrown is shown by its class.
    if (CapabilityError.is(error) || isInDocketWords(error)) return { reason: `it threw while loading: ${error.message}${where}`, ...at };
    // A package that loads its compiled addon as it is imported (bcrypt, better-sqlite3): what to
    // use instead, as a handler's call of one says it (docs/editor-types.md) — no fault of the file's code.
    if (/\bERR_DLOPEN_FAILED$/.test(thrownClass(error))) {
      return { reason: `it loaded a native addon (a compiled .node module of an npm package) while loading${where}, which docket's runtime could not load (ERR_DLOPEN_FAILED): docket runs capabilities on Bun, which loads many but not all Node addons; use a package without native code (bun:sqlite for better-sqlite3, bcryptjs for bcrypt), or run that tool as a command with ctx.exec. The server's log names the module`, detail: said, ...at, outside: true };
    }
    return { reason: `it threw while loading: ${thrownClass(error)}${where}${UNSAID}`, detail: said, ...at };
  }
  return { reason: `it threw while loading: ${thrownClass(error)}${UNSAID}`, detail: `it threw while loading: ${notAnErrorText(error)}`, line: null, column: null };
}


/**
 * The export and module of the runtime's link error for a name a module does not export, as Bun
 * words it (for a named import, and for a default one); null for anything else, a SyntaxError the
 * file threw itself included (it has a frame in a file).
 */
function missingExportOf(error: Error): { name: string; module: string } | null {
  if (error.name !== "SyntaxError" || Object.getPrototypeOf(error) !== SyntaxError.prototype || FRAME_IN_A_FILE.test(error.stack ?? "")) return null;
  // Whole messages only, and names that are identifiers: the text around them is the runtime's.
  const named = /^Export named '([A-Za-z_$][\w$]*)' not found in module '([^']+)'\.?$/.exec(error.message);
  if (named) return { name: named[1]!, module: named[2]! };
  const other = /^module '([^']+)' does not have an export named '([A-Za-z_$][\w$]*)'\.(?: Did you mean '[A-Za-z_$][\w$]*'\?)?$/.exec(error.message);
  if (other) return { name: other[2]!, module: other[1]! };
  const missingDefault = /^Missing '([A-Za-z_$][\w$]*)' export in module '([^']+)'\.?$/.exec(error.message);
  if (missingDefault) return { name: missingDefault[1]!, module: missingDefault[2]! };
  // A re-export (`export { helpr } from "./_helper.ts"`).
  const reexported = /^export '([A-Za-z_$][\w$]*)' not found in '([^']+)'$/.exec(error.message);
  return reexported ? { name: reexported[1]!, module: reexported[2]! } : null;
}

/** A stack frame in a file on disk (`at … (/path/file.ts:3:9)`): a thrown error has one, a link error none. */
const FRAME_IN_A_FILE = /\(\/[^()]*:\d+:\d+\)|\bat \/[^\s]*:\d+:\d+/;

/**
 * Where the file's text imports `name` from `module` — named by its specifier (`docket`,
 * `node:path`), by the path a package resolved to (`…/node_modules/zod/index.js`) or by a local
 * module's path — in a statement of its own text; null when none does.
 */
function importNaming(module: string, name: string, file: string, text: string | undefined): SourceLocation | null {
  if (text === undefined) return null;
  const ofModule = specifierTest(module, file);
  for (const found of text.matchAll(IMPORT_STATEMENT)) {
    const specifier = found[2]!;
    // Where its opening quote stands: the statement's clause ends there.
    const quote = found.index! + found[0].length - specifier.length - 2;
    if (!ofModule(specifier) || !namesExport(text.slice(found.index!, quote), name)) continue;
    // 1-based, as locateSpecifier says it.
    const before = text.slice(0, quote);
    return { line: before.split("\n").length, column: quote - before.lastIndexOf("\n") };
  }
  return null;
}

/** A static import or re-export and its specifier: `import { a } from "x"`, `export * from 'x'`. */
const IMPORT_STATEMENT = /\b(?:import|export)\b[^;"'`]*?\bfrom\s*(["'])([^"'\n]+)\1/g;

/** Whether a specifier as written names `module` as the runtime reported it. */
function specifierTest(module: string, file: string): (specifier: string) => boolean {
  const pkg = installedPackageOf(module);
  if (pkg !== null) return (specifier) => packageOf(specifier) === pkg;
  if (module.startsWith("/") || module.startsWith("file:")) {
    const path = withoutQuery(module.startsWith("file:") ? fileURLToPath(module) : module);
    const bare = path.replace(/\.[cm]?[jt]sx?$/, "");
    return (specifier) => specifier.startsWith(".") && [path, bare].includes(resolve(dirname(file), specifier));
  }
  const builtin = module.startsWith("node:") ? module.slice("node:".length) : null;
  return (specifier) => specifier === module || specifier === builtin;
}

/** Whether an import statement's clause (before its specifier) names the export `name`; `default` by a default import. */
function namesExport(clause: string, name: string): boolean {
  if (name === "default" && /^\s*import\s+(?:type\s+)?[A-Za-z_$][\w$]*\s*(?:,|from\b)/.test(clause)) return true;
  // `name` is an identifier (missingExportOf): `$` is the one character of it a pattern reads otherwise.
  return new RegExp(`(?<![\\w$])${name.replaceAll("$", "\\$")}(?![\\w$])`).test(clause.replace(/\bfrom\s*$/, ""));
}

/**
 * A thrown value that is no Error, as a load error says it: a string as it is; anything else by
 * what it is, then its message or its value (`throw { message: "…" }` read "[object Object]").
 */
function notAnErrorText(error: unknown): string {
  if (typeof error === "string") return error;
  const isObject = error !== null && (typeof error === "object" || typeof error === "function");
  const message = isObject ? (error as { message?: unknown }).message : undefined;
  const said = typeof message === "string" ? message : isObject || error === null || error === undefined ? null : String(error);
  return said === null || said === "" ? thrownClass(error) : `${thrownClass(error)}: ${said}`;
}

function firstBuildMessage(error: unknown): { message: string; position: BuildPosition | undefined; more: number } | null {
  if (isNamed(error, "BuildMessage")) {
    return { message: messageOf(error), position: (error as { position?: BuildPosition }).position, more: 0 };
  }
  const nested = (error as { errors?: unknown[] } | null)?.errors;
  if (Array.isArray(nested)) {
    const builds = nested.filter((e) => isNamed(e, "BuildMessage"));
    if (builds.length > 0) return { message: messageOf(builds[0]), position: (builds[0] as { position?: BuildPosition }).position, more: builds.length - 1 };
  }
  return null;
}

function fromBuildMessage(message: string, position: BuildPosition | undefined, more: number, file: string, text: string | undefined): ImportFailure {
  const suffix = more > 0 ? ` (and ${more} more)` : "";
  const at = locationOf(position, file);
  if (at.line === null && position?.file && position.line) {
    // The syntax error is in a module the capability imports: name that file, not the capability,
    // and point at the line of the capability that imports it, when it does so itself.
    const other = relative(dirname(file), withoutQuery(position.file));
    const imported = importOf(position.file, file, text);
    return { reason: `syntax error in ${other} line ${position.line}: ${message}${suffix}`, line: imported?.line ?? null, column: imported?.column ?? null };
  }
  return { reason: `syntax error: ${message}${suffix}`, ...at };
}

/**
 * A module the runtime still believed was there and could not read (`ENOENT reading "…"`): Bun
 * keeps every folder listing it made for the process's life, so a package uninstalled or a helper
 * deleted while serving resolves to its old path and then fails to read. Bun reports that as a
 * build message, which is no syntax error: say what is gone and how to bring it back.
 */
function fromReadFailure(message: string, file: string, text: string | undefined): ImportFailure | null {
  const read = /^(E[A-Z]+) reading "([^"]+)"$/.exec(message.trim());
  if (!read) return null;
  const [, code, path] = read as unknown as [string, string, string];
  const gone = withoutQuery(path);
  const pkg = installedPackageOf(gone);
  if (code === "ENOENT" && pkg !== null) {
    const advice = installAdvice(pkg, dirname(file));
    const at = locateSpecifier(text, pkg) ?? { line: null, column: null };
    return { reason: `cannot load the package "${pkg}": ${gone} is gone (uninstalled, or its node_modules replaced, while docket ran). Install it again with \`${advice.command}\` in ${advice.dir}, or remove the import.`, ...at, outside: true };
  }
  const shown = samePath(gone, file) ? "the file" : relative(dirname(file), gone);
  const reason = `cannot read ${shown} (${code}): it was removed or renamed while it was being loaded. Restore it, or correct the import that names it.`;
  // A path the file's text does not name was computed when it ran (see the unresolved import above).
  const written = text ?? readTextOrNothing(file) ?? "";
  if (shown !== "the file" && !written.includes(shown) && !written.includes(shown.replace(/\.[cm]?[jt]sx?$/, ""))) {
    return { reason: `cannot read a module whose name the file computes when it runs (${code})${UNSAID}`, detail: reason, line: null, column: null, outside: true };
  }
  return { reason, line: null, column: null, outside: true };
}

/** The position if it points into `file`. */
function locationOf(position: BuildPosition | undefined, file: string): { line: number | null; column: number | null } {
  if (!position || !position.file || !position.line || samePath(position.file, file) === false) return { line: null, column: null };
  return { line: position.line, column: position.column ?? null };
}

const FRAME = /(?:\(|\bat\s)((?:file:\/\/)?\/?[^\s()]*?)(?:\?[^\s():]*)?:(\d+):(\d+)\)?/g;

/** The innermost stack frame inside `file` (query strings from cache-busting imports ignored). */
function frameIn(error: Error, file: string): { line: number | null; column: number | null } {
  for (const match of (error.stack ?? "").matchAll(FRAME)) {
    if (samePath(match[1]!, file)) return { line: Number(match[2]), column: Number(match[3]) };
  }
  const own = error as Error & { sourceURL?: string; line?: number; column?: number };
  if (own.sourceURL && samePath(own.sourceURL, file) && typeof own.line === "number") {
    return { line: own.line, column: typeof own.column === "number" ? own.column : null };
  }
  return { line: null, column: null };
}

/**
 * The specifier as the file wrote it: docket imports a local module by its pinned path
 * (pinned-sources.ts), so the runtime names that; the relative one in the text is the user's.
 */
function asWritten(specifier: string, importer: string, text: string | undefined): string {
  if (!specifier.includes("?docket_pin=")) return specifier;
  return importOf(specifier, importer, text)?.specifier ?? withoutQuery(specifier);
}

/**
 * Where `importer` (its `text`) imports the local module at `path` (pinned or not) itself: the
 * specifier as written, relative, and where it stands; null when its text names it no such way.
 */
function importOf(path: string, importer: string, text: string | undefined): ({ specifier: string } & SourceLocation) | null {
  const relativePath = relative(dirname(importer), withoutQuery(path));
  const candidates = relativePath.startsWith("..") ? [relativePath] : [`./${relativePath}`, relativePath];
  for (const candidate of [...candidates, ...candidates.map((c) => c.replace(/\.[cm]?[jt]sx?$/, ""))]) {
    const at = locateSpecifier(text, candidate);
    if (at) return { specifier: candidate, ...at };
  }
  return null;
}

function readTextOrNothing(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** The innermost stack frame in a file on disk (a module the capability imports), if any. */
function innermostLocalFrame(error: Error): { path: string; line: number } | null {
  for (const match of (error.stack ?? "").matchAll(FRAME)) {
    const path = withoutQuery(match[1]!);
    // docket's own code inside the binary (/$bunfs/…, B:/~BUN/… on Windows) is no file of the user's.
    if (path.startsWith("/") && !path.includes("/node_modules/") && !path.startsWith("/$bunfs/")) return { path, line: Number(match[2]) };
  }
  return null;
}

/** A module's path without the query docket imports it by (`?docket_pin=…`, `?docket_version=…`). */
function withoutQuery(path: string): string {
  return path.replace(/\?.*$/, "");
}

function samePath(candidate: string, file: string): boolean {
  const bare = withoutQuery(candidate);
  try {
    return resolve(bare.startsWith("file:") ? fileURLToPath(bare) : bare) === file;
  } catch {
    return false;
  }
}

/**
 * Whether `error` is the runtime's own BuildMessage or ResolveMessage (Bun's globals), whose text a
 * load error quotes: not an Error a file named so (`e.name = "BuildMessage"`). By name where the
 * runtime has no such global.
 */
function isNamed(error: unknown, name: "BuildMessage" | "ResolveMessage"): boolean {
  if (typeof error !== "object" || error === null) return false;
  const runtimeClass = (globalThis as Record<string, unknown>)[name];
  if (typeof runtimeClass === "function") return error instanceof runtimeClass;
  return (error as { name?: unknown }).name === name || error.constructor?.name === name;
}

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === "string" ? message : String(error);
}

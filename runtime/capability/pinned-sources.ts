// The text a capability file is imported with, pinned: the runtime reads a file when it imports it,
// so a save landing between docket's read of the file and that import would have the module run
// a text docket never saw — one whose trial load (worker/load-probe.ts) never happened. A pinned
// specifier is served the text docket read, whatever is on disk by then, and so is every local
// module it imports (capability-sources.ts): their imports are written as pinned specifiers too
// (docs/containment.md, "Loading"). On Bun a module plugin serves them (adapter/bun-modules.ts);
// elsewhere nothing is pinned.

import { realpathSync } from "node:fs";
import { PIN_MARK, pinnedSpecifier, readCapabilitySources, realOrSelf, type CapabilitySources, type ImportScanner } from "./capability-sources.ts";
import { versionedSpecifier } from "./capability-version.ts";

/** The map lives on globalThis: plugin registration is per thread, and a second copy of this module must see the same pins. */
const PINS = Symbol.for("docket.pinned.sources");
const SERVED = Symbol.for("docket.pinned.served");
const IMPORTERS = Symbol.for("docket.pinned.importers");

/**
 * The pinned texts of this thread, oldest first, and their length. Kept, not released once an
 * import settles: a module asks for what it imports later too (an `import()` its top level did
 * not await, or one a handler makes when it runs), and must get the text of its own version then.
 */
type Pins = { texts: Map<string, string>; chars: number };

/**
 * The modules this thread imported pinned, as code, by path (and real path): the runtime names an
 * importer by its path alone. Each with the specifiers its served texts name as written (packages,
 * imports with attributes): a local script it asks for otherwise is refused (adapter/bun-modules.ts).
 */
type Importers = Map<string, Set<string>>;

type PinGlobal = { [PINS]?: Pins; [SERVED]?: ImportScanner; [IMPORTERS]?: Importers };

/** Past this much pinned text (UTF-16 units, about bytes for code), the oldest is let go (a server edited for days). */
const MAX_PINNED_CHARS = 64 * 1024 * 1024;

function pins(): Pins {
  const global = globalThis as PinGlobal;
  return (global[PINS] ??= { texts: new Map(), chars: 0 });
}

function importers(): Importers {
  const global = globalThis as PinGlobal;
  return (global[IMPORTERS] ??= new Map());
}

/** The specifiers the pinned module at `path` names as written, or undefined when no module of that path was imported pinned as code in this thread. */
export function pinnedImporterLiterals(path: string): ReadonlySet<string> | undefined {
  return importers().get(path);
}

/** Records `module` as imported pinned, with what it names as written: one set per path, whatever its versions (each names its specifiers literally). */
function addImporter(path: string, literals: readonly string[]): void {
  const held = importers();
  const keys = [path];
  const real = realOrSelf(path);
  if (real !== path) keys.push(real);
  for (const key of keys) {
    let known = held.get(key);
    if (known === undefined) held.set(key, (known = new Set()));
    for (const literal of literals) known.add(literal);
  }
}

/** The scanner of local imports where pinned specifiers are served (the Bun module plugin is registered in this thread), else null. */
function servedScanner(): ImportScanner | null {
  return (globalThis as PinGlobal)[SERVED] ?? null;
}

/** Called by the module plugin once it serves pinned specifiers in this thread, with how it finds local imports. */
export function markPinsServed(scanner: ImportScanner): void {
  (globalThis as PinGlobal)[SERVED] = scanner;
}

/**
 * The source of a capability file whose `text` was just read: the file and, where modules are
 * pinned, every local module it imports (capability-sources.ts), each read once.
 */
export function readSources(file: string, text: string): Promise<CapabilitySources> {
  return readCapabilitySources(file, text, servedScanner(), looksCommonJs);
}

/**
 * Pins `text` to `specifier`, also under the file's real path: the runtime resolves a symbolic
 * link before it asks for the module, so a linked file is asked for by its target. A specifier
 * names one text (its key digests it): pinned again, it is only marked as the newest.
 */
function pinSource(specifier: string, text: string): void {
  const held = pins();
  const at = specifier.indexOf(PIN_MARK);
  const keys = [specifier];
  try {
    const real = realpathSync(specifier.slice(0, at));
    if (real !== specifier.slice(0, at)) keys.push(real + specifier.slice(at));
  } catch {
    // Gone already: the import fails on its own, as it would have.
  }
  for (const key of keys) {
    if (held.texts.delete(key)) held.chars -= text.length;
    held.texts.set(key, text);
    held.chars += text.length;
  }
  for (const [key, old] of held.texts) {
    if (held.chars <= MAX_PINNED_CHARS) break;
    held.texts.delete(key);
    held.chars -= old.length;
  }
}

/**
 * True for a file the runtime would load as CommonJS (`module.exports`, `require`, no `import` or
 * `export` statement): a served text is always an ES module, so such a file is imported unpinned,
 * as before. Comments and string literals are left out of the look, so that neither a comment
 * line starting with "import" nor a string holding "require(" decides it.
 */
export function looksCommonJs(text: string): boolean {
  const code = text.replace(COMMENT_OR_STRING, (match) => (match.startsWith("/") ? " " : '""'));
  return !ES_MODULE_SYNTAX.test(code) && /\b(module\.exports|exports\.[\w$]|require\s*\()/.test(code);
}

/** A comment or a string literal (a template literal without nesting): what looksCommonJs leaves out. */
const COMMENT_OR_STRING = /\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`/g;

/** An `import` or `export` statement, or `import.meta`: only an ES module has them (`import(…)` is allowed anywhere). */
const ES_MODULE_SYNTAX = /(?:^|[\s;{}()])(?:import\s+[\w$]|import\s*[*{"]|import\.meta|export\s+[\w$]|export\s*[{*])/;

/**
 * How a capability's source is imported: pinned to the text read, its local modules with it,
 * where pins are served and it is an ES module; else by its version, as it is on disk. `pin()`
 * just before the import.
 */
export function importTarget(sources: CapabilitySources): { specifier: string; pinned: boolean; pin(): void } {
  const { file, version } = sources;
  // A linked capability file is imported by its target: the runtime keeps where a link led the
  // first time, so a link pointed elsewhere (`ln -sfn`) was still asked for by its old target,
  // whose pin this version does not have (pinSource pins the target it leads to now).
  const path = realOrSelf(file);
  // A CommonJS capability file loads what it requires from disk, as documented: not refused.
  if (servedScanner() === null || sources.commonJs) return { specifier: versionedSpecifier(path, version), pinned: false, pin: () => void importers().delete(file) };
  return {
    specifier: pinnedSpecifier(path, version),
    pinned: true,
    pin() {
      for (const module of sources.modules) {
        pinSource(pinnedSpecifier(module.path, module.key, module.data), module.served);
        if (module.data === undefined) addImporter(module.path, module.literals ?? []);
      }
    },
  };
}

/** The text pinned to `specifier` (the plugin's side), or undefined. */
export function pinnedText(specifier: string): string | undefined {
  return pins().texts.get(specifier);
}

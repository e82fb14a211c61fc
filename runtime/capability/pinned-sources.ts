// The text a capability file is imported with, pinned: the runtime reads a file when it imports it,
// so a save landing between docket's read of the file and that import would have the module run
// a text docket never saw — one whose trial load (worker/load-probe.ts) never happened. A pinned
// specifier is served the text docket read, whatever is on disk by then, and so is every local
// module it imports (capability-sources.ts): their imports are written as pinned specifiers too
// (docs/containment.md, "Loading"). On Bun a module plugin serves them (adapter/bun-modules.ts);
// elsewhere nothing is pinned.

import { realpathSync } from "node:fs";
import { readCapabilitySources, type CapabilitySources, type ImportScanner, type SourceModule } from "./capability-sources.ts";
import { versionedSpecifier } from "./capability-version.ts";

/** The map lives on globalThis: plugin registration is per thread, and a second copy of this module must see the same pins. */
const PINS = Symbol.for("docket.pinned.sources");
const SERVED = Symbol.for("docket.pinned.served");

/** A pinned text and how many imports in progress hold it (two capabilities may share a helper). */
type Pin = { text: string; holders: number };

type PinGlobal = { [PINS]?: Map<string, Pin>; [SERVED]?: ImportScanner };

function pins(): Map<string, Pin> {
  const global = globalThis as PinGlobal;
  return (global[PINS] ??= new Map());
}

/** The specifier under which the module at `path` is imported with exactly the text of `key` (`sha256:…`). */
function pinnedSpecifier(path: string, key: string): string {
  return `${path}${MARK}${key.replace(/^sha256:/, "")}`;
}

const MARK = "?docket_pin=";

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
 * Pins `text` to `specifier` until the returned function is called (once the import settled).
 * Also under the file's real path: the runtime resolves a symbolic link before it asks for the
 * module, so a linked capability file is asked for by its target.
 */
function pinSource(specifier: string, text: string): () => void {
  const map = pins();
  const at = specifier.indexOf(MARK);
  const keys = [specifier];
  try {
    const real = realpathSync(specifier.slice(0, at));
    if (real !== specifier.slice(0, at)) keys.push(real + specifier.slice(at));
  } catch {
    // Gone already: the import fails on its own, as it would have.
  }
  // A specifier names one text (its key digests it), so a second holder pins the same text.
  for (const key of keys) {
    const pin = map.get(key);
    if (pin) pin.holders++;
    else map.set(key, { text, holders: 1 });
  }
  return () => {
    for (const key of keys) {
      const pin = map.get(key);
      if (pin && --pin.holders === 0) map.delete(key);
    }
  };
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
 * (just before the import) returns the unpin, for once the import settled.
 */
export function importTarget(sources: CapabilitySources): { specifier: string; pinned: boolean; pin(): () => void } {
  const { file, version, text } = sources;
  if (servedScanner() === null || looksCommonJs(text)) return { specifier: versionedSpecifier(file, version), pinned: false, pin: () => () => {} };
  const keys = new Map(sources.modules.map((module) => [module.path, module.key]));
  return {
    specifier: pinnedSpecifier(file, version),
    pinned: true,
    pin() {
      let unpins = sources.modules.map((module) => pinSource(pinnedSpecifier(module.path, module.key), servedText(module, keys)));
      return () => {
        unpins.forEach((unpin) => unpin());
        unpins = [];
      };
    },
  };
}

/**
 * A module's text with each local import naming its pinned specifier, so that the runtime asks for
 * the helper docket read, not the file on disk; a helper missing when it was read is asked for as
 * missing (the module plugin serves an error). Only the string of the specifier changes (comments
 * between `from` or `import(` and it are kept): lines keep their numbers. An import written some
 * way this does not match is left to the runtime.
 */
function servedText(module: SourceModule, keys: Map<string, string>): string {
  let text = module.text;
  for (const { specifier, path, missing } of module.imports) {
    const key = missing ? MISSING : keys.get(path);
    if (key === undefined) continue;
    const quoted = new RegExp(`(\\b(?:from|import)${GAP}\\(?${GAP})(["'\`])${escapeRegExp(specifier)}\\2`, "g");
    text = text.replace(quoted, (_, before: string) => before + JSON.stringify(pinnedSpecifier(path, key)));
  }
  return text;
}

/** Blanks and comments, as they may stand between `from` (or `import(`) and a specifier. */
const GAP = String.raw`(?:\s|\/\*[\s\S]*?\*\/|\/\/[^\n]*\n)*`;

/** The key of a local module that was missing when docket read the capability. */
export const MISSING = "missing";

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The text pinned to `specifier` (the plugin's side), or undefined. */
export function pinnedText(specifier: string): string | undefined {
  return pins().get(specifier)?.text;
}

// The text a capability file is imported with, pinned: the runtime reads a file when it imports it,
// so a save landing between docket's read of the file and that import would have the module run
// a text docket never saw — one whose trial load (worker/load-probe.ts) never happened. A pinned
// specifier is served the text docket read, whatever is on disk by then (docs/containment.md,
// "Loading"). On Bun a module plugin serves it (adapter/bun-modules.ts); elsewhere nothing is pinned.

import { realpathSync } from "node:fs";
import { versionedSpecifier } from "./capability-version.ts";

/** The map lives on globalThis: plugin registration is per thread, and a second copy of this module must see the same pins. */
const PINS = Symbol.for("docket.pinned.sources");
const SERVED = Symbol.for("docket.pinned.served");

type PinGlobal = { [PINS]?: Map<string, string>; [SERVED]?: true };

function pins(): Map<string, string> {
  const global = globalThis as PinGlobal;
  return (global[PINS] ??= new Map());
}

/** The specifier under which `file` is imported with exactly `text` (of `version`, `sha256:…`). */
function pinnedSpecifier(file: string, version: string): string {
  return `${file}${MARK}${version.replace(/^sha256:/, "")}`;
}

const MARK = "?docket_pin=";

/** True where pinned specifiers are served (the Bun module plugin is registered in this thread). */
function pinsServed(): boolean {
  return (globalThis as PinGlobal)[SERVED] === true;
}

/** Called by the module plugin once it serves pinned specifiers in this thread. */
export function markPinsServed(): void {
  (globalThis as PinGlobal)[SERVED] = true;
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
  for (const key of keys) map.set(key, text);
  return () => {
    for (const key of keys) if (map.get(key) === text) map.delete(key);
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
 * How a text of `file` (of `version`) is imported: pinned to that text where pins are served and
 * it is an ES module, else by its version, as it is on disk. `pin()` (just before the import)
 * returns the unpin, for once the import settled.
 */
export function importTarget(file: string, version: string, text: string): { specifier: string; pin(): () => void } {
  if (!pinsServed() || looksCommonJs(text)) return { specifier: versionedSpecifier(file, version), pin: () => () => {} };
  const specifier = pinnedSpecifier(file, version);
  return { specifier, pin: () => pinSource(specifier, text) };
}

/** The text pinned to `specifier` (the plugin's side), or undefined. */
export function pinnedText(specifier: string): string | undefined {
  return pins().get(specifier);
}

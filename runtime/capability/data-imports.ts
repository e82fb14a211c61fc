// Data a capability imports: a JSON file, or a file imported as text. It is part of the capability
// like its local modules (capability-sources.ts): read once, counted in its version, and served
// to every thread as the value of the text read (adapter/bun-modules.ts), so that an edit is a new
// version everywhere at the next reload, never one thread's old value beside another's new one
// (docs/authoring.md, "Live reload").

import type { ImportUse } from "./_specifier-rewrite.ts";

/** How a data file is served: `json`, its parsed value; `text`, its text as a string. */
export type DataKind = "json" | "text";

const JSON_FILE = /\.json$/i;
/** What the runtime imports as text by its name alone. */
const TEXT_FILE = /\.txt$/i;

/**
 * How a local file is imported, from the ways a module uses its specifier: as code, and as which
 * kinds of data. A JSON file imported plainly (or `with { type: "json" }`) is json; a file
 * imported `with { type: "text" }`, or a `.txt` file, is text. Other attributes (`type: "file"`,
 * `"toml"`) are neither: the runtime reads such a file itself.
 */
export function importKinds(path: string, uses: ReadonlySet<ImportUse>): { code: boolean; data: DataKind[] } {
  const plain = uses.has("import") || uses.has("require");
  const json = JSON_FILE.test(path);
  const text = TEXT_FILE.test(path);
  const data: DataKind[] = [];
  if (uses.has("type:text") || (plain && text)) data.push("text");
  if (uses.has("type:json") || (plain && json)) data.push("json");
  return { code: plain && !json && !text, data };
}

/**
 * Why `text` cannot be served as data of `kind`, or null: a JSON file that does not parse, or one
 * imported by `require()` whose value is not an object (served as a module, require() gives an
 * object of its exports: an array would arrive as one).
 */
export function dataProblem(kind: DataKind, text: string, required: boolean): string | null {
  if (kind === "text") return null;
  let value: unknown;
  try {
    value = parseJson(text);
  } catch (error) {
    return `is not valid JSON (${(error as Error).message}); correct it`;
  }
  if (required && !isPlainObject(value)) {
    return "is loaded with require() but its value is not an object, and docket serves a JSON file as a module, whose require() gives an object; import it instead (import list from …)";
  }
  return null;
}

/** What a data module exports, as the runtime's own JSON and text imports do: its value as `default`, and a JSON object's members by name. */
export function dataExports(kind: DataKind, text: string): Record<string, unknown> {
  if (kind === "text") return { default: text };
  const prepared = preparedData();
  // Looked up only where something was prepared (a trial): a key of megabytes is hashed to look.
  const ready = prepared.size > 0 ? prepared.get(text) : undefined;
  if (ready !== undefined) {
    prepared.delete(text);
    return ready;
  }
  const value = parseJson(text);
  return isPlainObject(value) ? { ...value, default: value } : { default: value };
}

/** Per thread, on globalThis as the pins are (pinned-sources.ts): a second copy of this module must see them. */
const PREPARED = Symbol.for("docket.data.prepared");

function preparedData(): Map<string, Record<string, unknown>> {
  const global = globalThis as { [PREPARED]?: Map<string, Record<string, unknown>> };
  return (global[PREPARED] ??= new Map());
}

/**
 * Parses a JSON text now, for the import that asks for it next (its `dataExports`, once): a trial
 * load (worker/load-probe.ts) parses the data a file imports before it times the file's top level,
 * since 20 MB of JSON takes a second or more to parse on a busy machine, and that time is not the
 * top level's. A text that does not parse is left to its import, which fails as it would have.
 */
export function prepareData(kind: DataKind, text: string): void {
  if (kind !== "json") return;
  try {
    preparedData().set(text, dataExports(kind, text));
  } catch {
    // Its import says why, with the file.
  }
}

/** JSON as the runtime reads a JSON file: a byte order mark first is allowed. */
function parseJson(text: string): unknown {
  return JSON.parse(text.startsWith("\uFEFF") ? text.slice(1) : text);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

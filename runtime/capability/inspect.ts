import { schemaNodes } from "./schema-nodes.ts";
import { access, readdir, stat } from "node:fs/promises";
import { constants, lstatSync, readlinkSync } from "node:fs";
import { types } from "node:util";
import { basename, join, resolve } from "node:path";
import * as v from "valibot";
import { describeImportFailure } from "./_import-failure.ts";
import { uninstalledSince } from "./_uninstalled-packages.ts";
import { CAPABILITY_ID_PATTERN, CAPABILITY_ID_RULE, MAX_CAPABILITY_ID_LENGTH, nonAsciiNote, skippedIdReason } from "./capability-id.ts";
import { locateProperty } from "./_source-lines.ts";
import { didYouMeanText } from "./did-you-mean.ts";
import type { CapabilitySources } from "./capability-sources.ts";
import { CapabilityError } from "./capability-error.ts";
import { readRegularFileText } from "./open-regular-file.ts";
import { caseTwinOf } from "./_case-twin.ts";
import { importTarget, readSources } from "./pinned-sources.ts";
import { MAX_TIMEOUT_MS, type CapabilityDef } from "./declaration.ts";
import { SchemaConversionError, toCapabilityJsonSchema, type SchemaSide } from "./json-schema.ts";
import type { JsonSchema } from "./registered.ts";
import { thrownClass } from "../execution/thrown.ts";
import { MAX_INPUT_DEPTH } from "../execution/json-depth.ts";

/** The id shape: lower-case dotted, `namespace.verb` (capability-id.ts). */
export const CAPABILITY_ID = CAPABILITY_ID_PATTERN;

const ERROR_CODE = /^[a-z][a-z0-9_]*$/;

/**
 * Every field a declaration may have (docs/handler-api.md). Any other is refused: a misspelled
 * optional field (`cancelable`, `timeoutMs`) would otherwise be ignored without a word.
 */
const DECLARATION_FIELDS = Object.keys({
  id: true,
  title: true,
  description: true,
  effect: true,
  input: true,
  output: true,
  cancellable: true,
  timeout_ms: true,
  cache: true,
  execution: true,
  examples: true,
  errors: true,
  handler: true,
  reconcile: true,
} satisfies Record<keyof CapabilityDef, true>);

/** Names other tools (or docket's own start request) give to a declaration field: the field meant. */
const SAME_MEANING: Record<string, string> = { deadline_ms: "timeout_ms", timeout: "timeout_ms", deadline: "timeout_ms", name: "id", summary: "description", schema: "input", run: "handler" };

/** Unknown fields reported one by one; past this, the rest are counted in one problem (each costs a search of the text). */
const MAX_UNKNOWN_FIELDS_REPORTED = 10;

/** What kind of problem a capability file has; stable, for agents and CI annotations. */
export type CapabilityProblemCode =
  | "import_failed"
  | "load_timeout"
  | "no_default_export"
  | "not_a_capability"
  | "bad_id"
  | "file_name_mismatch"
  | "bad_declaration"
  | "schema_not_convertible"
  | "bad_example"
  | "duplicate_id";

/** One thing wrong with a capability file, with the line to edit when it can be found. */
export interface CapabilityProblem {
  code: CapabilityProblemCode;
  reason: string;
  line: number | null;
  column: number | null;
  /** Refused by its trial load in a worker (worker/load-probe.ts): importing it may hang or end the thread. */
  kept_out?: boolean;
  /** The reason with what the file threw, for the process's own log only (_import-failure.ts). */
  detail?: string;
}

/** The verdict on one declaration: its problems, and its JSON Schemas when they convert. */
export interface DeclarationCheck {
  id: string | null;
  problems: CapabilityProblem[];
  input_schema: JsonSchema | null;
  output_schema: JsonSchema | null;
  /** The declaration as checked: a plain copy of the default export's own fields (readDeclaration), or null when it could not be read. */
  declaration: Record<PropertyKey, unknown> | null;
}

/** Options of `checkDeclaration`. */
export interface DeclarationCheckOptions {
  /** The file's base name (`files.digest.ts`); when given it must be `<id>.ts` or `<id>.js`. */
  fileName?: string;
  /** The file's source text, to point problems at a line. */
  text?: string;
}

/**
 * Checks a declaration as the registry and `capabilities.verify` both need it (one implementation):
 * id shape, file name, required fields, schemas (valibot, convertible), examples, error codes.
 */
export function checkDeclaration(value: unknown, options: DeclarationCheckOptions = {}): DeclarationCheck {
  const unread = (reason: string): DeclarationCheck => ({ id: null, problems: [{ code: "bad_declaration", reason, line: null, column: null }], input_schema: null, output_schema: null, declaration: null });
  let read: ReturnType<typeof readDeclaration>;
  try {
    read = readDeclaration(value);
  } catch (error) {
    return unread(declarationThrew(error));
  }
  if (!read.ok) return unread(read.reason);
  // A value deeper in it (an example, a schema's part) may still be a getter or a Proxy that throws:
  // one file's load error, never a reload of every file stopped (foundation tester, session 48).
  try {
    return checkReadDeclaration(read.value, options);
  } catch (error) {
    return unread(declarationThrew(error));
  }
}

/** The load error of a declaration whose reading threw (a getter or a Proxy deep in it): its class only, as any thrown value's. */
export function declarationThrew(error: unknown): string {
  return `reading its declaration threw ${thrownClass(error)}; declare plain values in capability({ … }), with no getter or Proxy`;
}

/**
 * The default export as a plain object of its own fields, read once: the declaration is read on
 * the server's main thread, where a getter that throws (`get id() { throw … }`) or a Proxy's trap
 * stopped every command, and a server's every reload, not one file. A getter, a Proxy or an
 * instance of a class is refused by name, never run; anything else than an object is the caller's
 * to refuse (not a capability).
 */
function readDeclaration(value: unknown): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (typeof value !== "object" || value === null) return { ok: true, value };
  if (types.isProxy(value)) return { ok: false, reason: "the default export is a Proxy; export the object capability({ id, title, description, effect, input, output, handler }) returns" };
  if (Array.isArray(value)) return { ok: true, value: [] };
  // A module's namespace (`import * as ns from "./_ns.ts"; export default ns`) holds its exports as plain values.
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null && !types.isModuleNamespaceObject(value)) return { ok: false, reason: "the default export is an instance of a class, not a plain object; export the object capability({ id, title, description, effect, input, output, handler }) returns" };
  const copy: Record<PropertyKey, unknown> = {};
  for (const key of Reflect.ownKeys(value)) {
    const field = Object.getOwnPropertyDescriptor(value, key)!;
    if (field.get !== undefined || field.set !== undefined) return { ok: false, reason: `${describe(String(key))} is declared with a getter or setter; declare it as a plain value (${describe(String(key))}: …)` };
    copy[key] = field.value;
  }
  // Examples are published and stored as they are, read by every listing: copied whole as JSON
  // values here, so that nothing in them (a getter deep inside, a toJSON giving another value
  // than the one checked) runs on the main thread again (checking tester, session 48: a deep
  // getter made every capabilities/list a 500).
  if (Array.isArray(copy.examples)) {
    const examples = plainJsonCopy(copy.examples, "examples");
    if (!examples.ok) return examples;
    copy.examples = examples.value;
  }
  return { ok: true, value: copy };
}

/** The most values an example list may hold, nested ones included: a bound on the copy's time. */
const MAX_EXAMPLE_VALUES = 100_000;

/**
 * `value` copied as plain JSON values — objects of own data properties, arrays, strings, finite
 * numbers, booleans, null — without running any of its code; what is none of those (a getter, a
 * Proxy, a function, a class instance, a cycle) is named by its path and refused.
 */
function plainJsonCopy(value: unknown, path: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  let values = 0;
  const seen = new Set<object>();
  const refuse = (at: string, what: string) => ({ ok: false as const, reason: `${at} ${what}; an example is an input as JSON: plain objects, lists, strings, numbers, true, false and null` });
  const copy = (item: unknown, at: string, depth: number): { ok: true; value: unknown } | { ok: false; reason: string } => {
    if (++values > MAX_EXAMPLE_VALUES) return refuse(path, `holds more than ${MAX_EXAMPLE_VALUES} values`);
    // As deep as an input may be: 40,000 levels overflowed the copy's stack (round-2 checking tester, session 48).
    if (depth > MAX_INPUT_DEPTH) return refuse(path, `nests deeper than ${MAX_INPUT_DEPTH} levels, as no input may`);
    if (item === null || typeof item === "string" || typeof item === "boolean") return { ok: true, value: item };
    if (typeof item === "number") return Number.isFinite(item) ? { ok: true, value: item } : refuse(at, `is ${item}, which JSON cannot hold`);
    if (typeof item !== "object") return refuse(at, `is ${item === undefined ? "undefined" : `a ${typeof item}`}`);
    if (types.isProxy(item)) return refuse(at, "is a Proxy");
    if (seen.has(item)) return refuse(at, "holds itself (a cycle)");
    const list = Array.isArray(item);
    const prototype = Object.getPrototypeOf(item);
    if (!list && prototype !== Object.prototype && prototype !== null) return refuse(at, "is an instance of a class");
    seen.add(item);
    if (list) {
      // Each index up to its length, a hole as the null JSON writes for it: a hole at 50,000,000
      // counted as one value and was listed as 50 million nulls (round-2 checking tester, session 48).
      const length = (item as unknown[]).length;
      if (length > MAX_EXAMPLE_VALUES - values) return refuse(path, `holds more than ${MAX_EXAMPLE_VALUES} values`);
      const out: unknown[] = [];
      for (let i = 0; i < length; i++) {
        const field = Object.getOwnPropertyDescriptor(item, String(i));
        if (field !== undefined && (field.get !== undefined || field.set !== undefined)) return refuse(`${at}[${i}]`, "is declared with a getter or setter");
        const inner = field === undefined ? { ok: true as const, value: null } : copy(field.value, `${at}[${i}]`, depth + 1);
        if (!inner.ok) return inner;
        out.push(inner.value);
      }
      seen.delete(item);
      return { ok: true, value: out };
    }
    const out: Record<string, unknown> = {};
    for (const key of Reflect.ownKeys(item)) {
      if (typeof key === "symbol") continue;
      const field = Object.getOwnPropertyDescriptor(item, key)!;
      const where = `${at}.${key}`;
      if (field.get !== undefined || field.set !== undefined) return refuse(where, "is declared with a getter or setter");
      if (!field.enumerable) continue;
      const inner = copy(field.value, where, depth + 1);
      if (!inner.ok) return inner;
      // Defined, not assigned: an example's "__proto__" key is a field, never the copy's prototype.
      Object.defineProperty(out, key, { value: inner.value, enumerable: true, writable: true, configurable: true });
    }
    seen.delete(item);
    return { ok: true, value: out };
  };
  return copy(value, path, 0);
}

function checkReadDeclaration(value: unknown, options: DeclarationCheckOptions): DeclarationCheck {
  const problems: CapabilityProblem[] = [];
  const report = (code: CapabilityProblemCode, key: string | null, reason: string) => {
    const at = key === null ? null : locateProperty(options.text, key);
    problems.push({ code, reason, line: at?.line ?? null, column: at?.column ?? null });
  };
  if (typeof value !== "object" || value === null || (!("id" in value) && !("handler" in value))) {
    report("not_a_capability", null, `the default export is not a capability (got ${describe(value)}); write export default capability({ id, title, description, effect, input, output, handler })`);
    return { id: null, problems, input_schema: null, output_schema: null, declaration: null };
  }
  const def = value as Partial<Record<keyof CapabilityDef, unknown>>;

  const unknown = Object.keys(value).filter((key) => !DECLARATION_FIELDS.includes(key));
  for (const key of unknown.slice(0, MAX_UNKNOWN_FIELDS_REPORTED)) {
    const hint = SAME_MEANING[key] ? `Did you mean "${SAME_MEANING[key]}"?` : didYouMeanText(key, DECLARATION_FIELDS);
    report("bad_declaration", key, `${describe(key)} is not a declaration field. ${hint || `Remove it; a declaration has only ${DECLARATION_FIELDS.join(", ")}.`}`);
  }
  if (unknown.length > MAX_UNKNOWN_FIELDS_REPORTED) {
    report("bad_declaration", null, `${unknown.length - MAX_UNKNOWN_FIELDS_REPORTED} more fields are not declaration fields either. Remove them; a declaration has only ${DECLARATION_FIELDS.join(", ")}.`);
  }

  const id = typeof def.id === "string" && CAPABILITY_ID.test(def.id) ? def.id : null;
  if (def.id === undefined) report("bad_id", null, 'id is missing; declare one lower-case dotted like "files.digest"');
  else if (id === null) report("bad_id", "id", `id ${describe(def.id)} must be lower-case dotted like "files.digest" or "repo.lint-check": ${CAPABILITY_ID_RULE}.${typeof def.id === "string" ? nonAsciiNote(def.id) : ""}`);
  else if (id.length > MAX_CAPABILITY_ID_LENGTH) report("bad_id", "id", `id "${id.slice(0, 40)}…" is ${id.length} characters; an id is at most ${MAX_CAPABILITY_ID_LENGTH}, since its MCP tool is named after it and agents' clients take tool names of at most ${MAX_CAPABILITY_ID_LENGTH}: give it a shorter one`);
  else if (skippedIdReason(id) !== null) report("bad_id", "id", `id "${id}": ${skippedIdReason(id)}, and rename the file to match`);
  else if (options.fileName !== undefined && options.fileName !== `${id}.ts` && options.fileName !== `${id}.js`) {
    report("file_name_mismatch", "id", `the file is named "${options.fileName}" but declares id "${id}"; rename the file to "${id}.ts" or change the id`);
  }

  for (const key of ["title", "description"] as const) {
    if (typeof def[key] !== "string" || (def[key] as string).trim() === "") report("bad_declaration", key, `${key} must be a non-empty string, got ${describe(def[key])}`);
  }
  if (def.effect !== "read" && def.effect !== "write") report("bad_declaration", "effect", `effect must be "read" or "write", got ${describe(def.effect)}`);
  if (typeof def.handler !== "function") report("bad_declaration", "handler", `handler must be a function (input, ctx) => output, got ${describe(def.handler)}`);
  if (def.reconcile !== undefined && typeof def.reconcile !== "function") {
    report("bad_declaration", "reconcile", `reconcile must be a function (input, ctx) => ({ outcome, evidence?, note? }), got ${describe(def.reconcile)}`);
  }
  if (def.cancellable !== undefined && typeof def.cancellable !== "boolean") report("bad_declaration", "cancellable", `cancellable must be true or false, got ${describe(def.cancellable)}`);
  if (def.execution !== undefined && def.execution !== "allowed" && def.execution !== "never" && def.execution !== "always") {
    report("bad_declaration", "execution", `execution must be "allowed", "always" or "never", got ${describe(def.execution)}`);
  }
  if (def.timeout_ms !== undefined && (!isPositiveInteger(def.timeout_ms) || (def.timeout_ms as number) > MAX_TIMEOUT_MS)) {
    report("bad_declaration", "timeout_ms", `timeout_ms must be a positive whole number of milliseconds up to ${MAX_TIMEOUT_MS} (about 24.8 days), got ${describe(def.timeout_ms)}`);
  }
  if (def.cache !== undefined && !isPositiveInteger((def.cache as { ttl_ms?: unknown } | null)?.ttl_ms)) {
    report("bad_declaration", "cache", `cache must be { ttl_ms: <positive whole number> }, got ${describe(def.cache)}`);
  }
  if (def.errors !== undefined) {
    if (!Array.isArray(def.errors)) report("bad_declaration", "errors", `errors must be a list of error codes, got ${describe(def.errors)}`);
    else for (const code of def.errors) {
      if (typeof code !== "string" || !ERROR_CODE.test(code)) report("bad_declaration", "errors", `error code ${describe(code)} must be lower snake case like "verification_failed"`);
    }
  }

  const input_schema = convert(def.input, "input", report);
  const output_schema = convert(def.output, "output", report);
  if (def.examples !== undefined) {
    if (!Array.isArray(def.examples)) report("bad_example", "examples", `examples must be a list of inputs, got ${describe(def.examples)}`);
    else if (isValibotSchema(def.input)) checkExamples(def.examples, def.input, report);
  }
  return { id, problems, input_schema, output_schema, declaration: value as Record<PropertyKey, unknown> };
}

/** True for a valibot schema (sync or async), recognized by shape so that module copies agree. */
export function isValibotSchema(value: unknown): value is v.GenericSchema {
  const candidate = value as { kind?: unknown; "~run"?: unknown; "~standard"?: { vendor?: unknown } } | null;
  return typeof value === "object" && value !== null && candidate!.kind === "schema" && typeof candidate!["~run"] === "function" && candidate!["~standard"]?.vendor === "valibot";
}

type Report = (code: CapabilityProblemCode, key: string | null, reason: string) => void;

function convert(schema: unknown, side: SchemaSide, report: Report): JsonSchema | null {
  if (!isValibotSchema(schema)) {
    report("bad_declaration", side, `${side} must be a valibot schema like v.object({ … }), got ${describe(schema)}`);
    return null;
  }
  const asyncAt = asyncPart(schema);
  if (asyncAt !== null) {
    report("bad_declaration", side, `the ${side} schema is async (${asyncAt}): docket checks ${side}s as they come, without awaiting, so an async check would never be awaited — a write would run on an input its check refused; use the synchronous forms (v.pipe, v.check, v.object) and do an async check in the handler (throw a CapabilityError "invalid_input")`);
    return null;
  }
  try {
    return toCapabilityJsonSchema(schema, side);
  } catch (error) {
    report("schema_not_convertible", side, error instanceof SchemaConversionError ? error.message : `the ${side} schema cannot be converted to JSON Schema: ${String(error)}`);
    return null;
  }
}

/** The type of the first async schema or action in `schema` (`v.pipeAsync`, `v.checkAsync`, `v.objectAsync`…), or null. */
function asyncPart(schema: unknown): string | null {
  for (const node of schemaNodes(schema)) if (node.async === true) return String(node.type ?? node.kind);
  return null;
}

function checkExamples(examples: unknown[], input: v.GenericSchema, report: Report): void {
  examples.forEach((example, i) => {
    try {
      const result = v.safeParse(input, example);
      if (result.success) return;
      const issue = result.issues[0];
      const path = issue.path?.map((item) => String(item.key)).join(".");
      // Without the value it received: an example may be computed (a secret read from the
      // environment), and a load error reaches every client (docs/security.md).
      const expected = issue.message.replace(/(?:\s*but received|:\s*Received) [\s\S]*$/, "");
      report("bad_example", "examples", `examples[${i}] does not match the input schema: ${path ? `input.${path}: ` : ""}${expected}`);
    } catch (error) {
      report("bad_example", "examples", `examples[${i}] could not be checked: its check threw ${thrownClass(error)}`);
    }
  });
}

/** A file that imported, with its default export and its text; or the problem that stopped it. */
export type ImportedCapabilityFile =
  | { ok: true; value: unknown; text: string; version: string }
  | { ok: false; problem: CapabilityProblem }
  | { ok: false; parked: Promise<void> };

/**
 * A trial load that outlasted a reload's patience (worker/load-probe.ts): the file is neither
 * loaded nor refused yet, and `parked` settles once its verdict is known.
 */
export interface ParkedTrial {
  parked: Promise<void>;
}

/** Options of `importCapabilityFile` and `inspectCapabilityFile`. */
export interface ImportCapabilityOptions {
  /** How to import a module; defaults to the runtime's dynamic `import()`. */
  importFile?: (specifier: string) => Promise<unknown>;
  /**
   * Import what is on disk now, the file and its local modules, never a module this thread kept
   * from an earlier text: pinned texts are a module per text (and per text of what they import);
   * a file that cannot be pinned is imported under a cache-busting name of its own.
   */
  fresh?: boolean;
  /** How long the import may take (`load_timeout_ms`); default DEFAULT_LOAD_TIMEOUT_MS. */
  timeoutMs?: number;
  /**
   * Specifiers (file + version) whose import did not finish in time before, kept across reloads:
   * met again, the file is load_timeout at once instead of holding every reload up once more.
   * Filled in here; a specifier leaves it when its import finally settles.
   */
  hung?: Set<string>;
  /**
   * Tries the file's text in a worker first (worker/load-probe.ts): a problem is why it must not be
   * imported here (its top level did not finish in time, ended its thread, or threw), null to
   * import it. The server passes one, so that a synchronous loop at a file's top level never
   * holds its main thread.
   */
  probe?: (sources: CapabilitySources) => Promise<CapabilityProblem | null | ParkedTrial>;
  /** Told what each file is made of once it is read (the server watches its local modules' folders). */
  onSources?: (sources: CapabilitySources) => void;
  /**
   * The name in the file's folder that differs from its own only by letter case (_case-twin.ts),
   * null for none; looked up when not given. Discovery lists each folder once and passes it.
   */
  caseTwin?: string | null;
}

/** The default of the `load_timeout_ms` limit, for callers that have no limits in hand. */
export const DEFAULT_LOAD_TIMEOUT_MS = 5000;

/** Imports one capability file and takes its default export; an import failure becomes a problem. */
export async function importCapabilityFile(absPath: string, options: ImportCapabilityOptions = {}): Promise<ImportedCapabilityFile> {
  return importPreparedFile(await prepareCapabilityFile(absPath, options), options);
}

/**
 * A capability file read, with its trial load (`probe`) begun but not awaited: what comes before
 * its import on this thread. Discovery prepares the next file while it imports one, so that the
 * next file's trial in a worker runs beside this thread's import instead of after it.
 */
export interface PreparedCapabilityFile {
  file: string;
  text: string;
  version: string;
  target: ReturnType<typeof importTarget>;
  /** The trial's verdict (null: import it), or null when there is no trial. */
  trial: Promise<CapabilityProblem | null | ParkedTrial> | null;
}

/**
 * Reads a capability file and begins its trial load: everything `importCapabilityFile` does
 * before its import, or the problem that stops it there. The trial runs on; `importPreparedFile`
 * awaits it.
 */
export async function prepareCapabilityFile(absPath: string, options: ImportCapabilityOptions = {}): Promise<PreparedCapabilityFile | ImportedCapabilityFile> {
  const file = resolve(absPath);
  // Refused before it is read: Bun would import the twin in its place (or fail naming the twin's path).
  const twin = options.caseTwin !== undefined ? options.caseTwin : caseTwinOf(file);
  if (twin !== null) {
    return {
      ok: false,
      problem: {
        code: "import_failed",
        reason: `its name differs from ${JSON.stringify(twin)} beside it only by letter case, and Bun cannot load two such files apart (it imports one of them for both), so neither is loaded; rename or remove one of them (a capability's file is named by its id, in lower case)`,
        line: null,
        column: null,
      },
    };
  }
  let text: string;
  try {
    // Only a regular file: a capability "file" that is a FIFO (a link to one) would block the read
    // for ever, and a link to /dev/zero would fill memory (open-regular-file.ts).
    text = await readRegularFileText(file, { label: "the file" });
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? missingFile(file) : CapabilityError.is(error) ? error.message : `the file cannot be read: ${(error as Error).message}`;
    return { ok: false, problem: { code: "import_failed", reason, line: null, column: null } };
  }
  let sources: CapabilitySources;
  try {
    sources = await readSources(file, text);
  } catch (error) {
    return { ok: false, problem: { code: "import_failed", reason: CapabilityError.is(error) ? error.message : `a module it imports cannot be read: ${(error as Error).message}`, line: null, column: null } };
  }
  options.onSources?.(sources);
  // Uninstalled since this file last loaded: the runtime would serve on the module it kept.
  const uninstalled = uninstalledSince(sources);
  if (uninstalled !== null) return { ok: false, problem: { code: "import_failed", reason: uninstalled, line: null, column: null } };
  // Bun reads a "?" in a module's path as the start of a query, whatever the folder: such a file
  // cannot be imported at all, and the runtime's own error names a path cut at the "?".
  if (file.includes("?")) {
    return {
      ok: false,
      problem: {
        code: "import_failed",
        reason: 'its path holds a "?", which the runtime reads as the start of a query in a module path, so it cannot be imported; rename the folder (or the file) to a name without "?"',
        line: null,
        column: null,
      },
    };
  }
  const version = sources.version;
  // A path, not a file:// URL: Bun 1.4 ignores the query of a file:// URL and returns the cached module.
  // Pinned where it can be: the module runs the text read here (its local modules' too), whatever a later save wrote.
  // Fresh: pinned texts are fresh already (a module per text read now, helpers included);
  // unpinned, the file is imported under a name of its own.
  const pinnedTarget = importTarget(sources);
  const target = options.fresh && !pinnedTarget.pinned ? { specifier: `${file}?docket_fresh=${crypto.randomUUID()}`, pinned: false, pin: () => {} } : pinnedTarget;
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
  if (options.hung?.has(target.specifier)) {
    return {
      ok: false,
      problem: {
        code: "load_timeout",
        reason: `the file has not finished loading since it first took longer than ${timeoutMs} ms, and its text has not changed (a top-level await that never settles, or slow work when it is imported); make its top level quick and save it again`,
        line: null,
        column: null,
      },
    };
  }
  // Tried in a worker with this very text: a failure there is the file's load error, and the
  // main thread never runs it.
  const trial = options.probe && !options.fresh ? options.probe(sources) : null;
  return { file, text, version, target, trial };
}

/** Imports a file `prepareCapabilityFile` read, once its trial passed; the same answers as `importCapabilityFile`. */
export async function importPreparedFile(prepared: PreparedCapabilityFile | ImportedCapabilityFile, options: ImportCapabilityOptions = {}): Promise<ImportedCapabilityFile> {
  if ("ok" in prepared) return prepared;
  const { file, text, version, target, trial } = prepared;
  const specifier = target.specifier;
  const importFile = options.importFile ?? ((specifier: string) => import(specifier));
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
  const hung = options.hung;
  if (trial !== null) {
    const problem = await trial;
    if (problem !== null && "parked" in problem) return { ok: false, parked: problem.parked };
    if (problem !== null) return { ok: false, problem: { ...problem, kept_out: true } };
  }
  let module: unknown;
  target.pin();
  try {
    const importing = importFile(specifier);
    const loaded = await withinTime(importing, timeoutMs);
    if (!loaded.settled) {
      if (hung) {
        hung.add(specifier);
        const settled = () => void hung.delete(specifier);
        importing.then(settled, settled);
      }
      return {
        ok: false,
        problem: {
          code: "load_timeout",
          reason: `the file did not finish loading within ${timeoutMs} ms (a top-level await that never settles, or slow work when it is imported); make its top level quick, or raise DOCKET_LOAD_TIMEOUT_MS`,
          line: null,
          column: null,
        },
      };
    }
    module = loaded.value;
  } catch (error) {
    const { reason, line, column, detail } = describeImportFailure(error, file, text);
    return { ok: false, problem: { code: "import_failed", reason, line, column, ...(detail !== undefined ? { detail } : {}) } };
  }
  const value = (module as { default?: unknown } | null)?.default;
  if (value === undefined) {
    return { ok: false, problem: { code: "no_default_export", reason: `the file has no default export; end it with export default capability({ … }) — or, if it is a module capabilities import, name it with a leading underscore (_${basename(file)}) and docket will not load it as a capability`, line: null, column: null } };
  }
  return { ok: true, value, text, version };
}

/**
 * The promise's value, or `settled: false` once `ms` passed. The import that never settles is
 * left pending: nothing can stop a module's evaluation, but nothing waits on it any more either,
 * and it does not hold the process open (docs/containment.md).
 */
async function withinTime<T>(promise: Promise<T>, ms: number): Promise<{ settled: true; value: T } | { settled: false }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<{ settled: false }>((resolve) => {
    timer = setTimeout(() => resolve({ settled: false }), ms);
  });
  try {
    return await Promise.race([promise.then((value) => ({ settled: true as const, value })), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Everything `capabilities.verify` reports about one file, checked on its own. */
export interface CapabilityFileReport {
  file: string;
  id: string | null;
  problems: CapabilityProblem[];
  input_schema: JsonSchema | null;
  output_schema: JsonSchema | null;
}

/**
 * Imports and checks one capability file in isolation: import, default export, declaration,
 * schemas, examples. Never throws for a bad file; duplicates across files are the caller's to find.
 */
export async function inspectCapabilityFile(absPath: string, options: Omit<ImportCapabilityOptions, "probe"> = {}): Promise<CapabilityFileReport> {
  const file = resolve(absPath);
  // Without a probe, nothing is parked.
  const imported = await importCapabilityFile(file, options);
  if (!imported.ok && "parked" in imported) throw new Error("a trial load was parked without a probe");
  if (!imported.ok) return { file, id: null, problems: [imported.problem], input_schema: null, output_schema: null };
  const check = checkDeclaration(imported.value, { fileName: basename(file), text: imported.text });
  return { file, ...check };
}

/**
 * File names loaded as capabilities: `.ts` / `.js`, except declarations, `_private` helpers,
 * hidden files (an editor's lock or backup: Emacs writes `.#name.ts` as a dangling link) and
 * tests beside the capabilities (`name.test.ts`, `name.spec.ts`, which a test runner imports).
 */
export function isCapabilityFileName(name: string): boolean {
  return /\.(ts|js)$/.test(name) && !/\.(d|test|spec)\.(ts|js)$/.test(name) && !name.startsWith("_") && !name.startsWith(".");
}

/** A folder of capability files as discovery finds it: its files, nothing there, or why it cannot be read. */
export type CapabilityFolder = { kind: "files"; files: string[] } | { kind: "absent" } | { kind: "unusable"; reason: string };

/**
 * The capability files of one folder as discovery loads them: absolute paths, sorted by name (an
 * `x.ts` before an `x.js`, see byStemThenTs), subfolders not descended into. A folder that is there
 * but cannot be listed (a file, a link to itself, no permission) says why, in words that end with
 * what to do: it stopped every command with EACCES, or served no capability without a word
 * (foundation tester, session 48).
 */
export async function capabilityFolder(dir: string): Promise<CapabilityFolder> {
  const folder = resolve(dir);
  try {
    if (!(await stat(folder)).isDirectory()) return { kind: "unusable", reason: "is a file, not a folder; capability files go in a folder of that name (move the file away)" };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return { kind: "unusable", reason: "is a link that leads back to itself; remove it, or make it a folder or a link to one" };
    if (code === "EACCES" || code === "EPERM") return { kind: "unusable", reason: "cannot be reached: permission denied on a folder above it; let this user enter the folders above it (chmod u+x)" };
    // A link whose target is gone is there, and says nothing loads: said, not taken for no folder.
    if (isLink(folder)) return { kind: "unusable", reason: "is a link to a folder that does not exist; create the folder it points to, or remove the link" };
    return { kind: "absent" };
  }
  try {
    const entries = await readdir(folder, { withFileTypes: true });
    // Readable but not enterable (mode 644): listed, and then every file refused as unreadable without a word of the folder.
    if (!(await access(folder, constants.X_OK).then(() => true, () => false))) return { kind: "unusable", reason: "cannot be entered: permission denied; let this user enter it (chmod u+x)" };
    const files = entries
      // A FIFO, a socket or a device with a capability's name is listed too: loading refuses it by
      // name (importCapabilityFile), rather than skipping it without a word.
      .filter((entry) => !entry.isDirectory() && isCapabilityFileName(entry.name))
      .map((entry) => entry.name)
      .sort(byStemThenTs)
      .map((name) => join(folder, name));
    return { kind: "files", files };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "an error";
    if (code === "EACCES" || code === "EPERM") return { kind: "unusable", reason: "cannot be read: permission denied; let this user read and enter it (chmod u+rx)" };
    return { kind: "unusable", reason: `cannot be read (${code}); check the folder and run again` };
  }
}

/** Whether `path` is a symbolic link; false when nothing is there, or a file stands where a folder above it should be. */
function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The capability files of one folder (capabilityFolder); `null` when it is not there or cannot be read. */
export async function listCapabilityFiles(dir: string): Promise<string[] | null> {
  const found = await capabilityFolder(dir);
  return found.kind === "files" ? found.files : null;
}

/**
 * Capability files in load order: by name, and of `x.ts` and `x.js`, the `.ts` first — the source
 * beside what a build emitted from it. The first to declare an id is served and the other is the
 * load error, so adding an `x.js` beside a served `x.ts` (a `tsc` run without `noEmit`) never
 * takes its place (authoring tester, session 43: alphabetical order served the new `.js`).
 */
function byStemThenTs(a: string, b: string): number {
  const stemA = a.replace(/\.(ts|js)$/, "");
  const stemB = b.replace(/\.(ts|js)$/, "");
  if (stemA !== stemB) return stemA < stemB ? -1 : 1;
  return a.endsWith(".ts") === b.endsWith(".ts") ? 0 : a.endsWith(".ts") ? -1 : 1;
}

function isPositiveInteger(value: unknown): boolean {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

/** A short, safe rendering of a wrong value for an error message. */
function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "function") return "a function";
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return "a list";
  return "an object";
}

/** Why a file that is listed cannot be opened: gone, or a link whose target is (it names the target, as `ls -l` would). */
function missingFile(file: string): string {
  try {
    if (lstatSync(file).isSymbolicLink()) return `the file is a symbolic link to ${JSON.stringify(readlinkSync(file))}, which does not exist; point it at the capability's file, or remove it`;
  } catch {
    // Gone meanwhile: as said below.
  }
  return "the file does not exist";
}

import type { JsonSchema } from "../capability/registered.ts";
import { hasSensitive, isSensitiveSchema } from "../execution/redaction.ts";
import { refTarget } from "../execution/schema-refs.ts";

type JsonType = "string" | "number" | "integer" | "boolean" | "null" | "object" | "array";

/** The JSON types a schema admits, looking through `anyOf`/`oneOf`/`allOf`, `const` and `enum`. */
function typesOf(schema: JsonSchema | undefined, depth = 0): Set<JsonType> {
  const types = new Set<JsonType>();
  if (!schema || typeof schema !== "object" || depth > 8) return types;
  const t = schema.type;
  for (const one of Array.isArray(t) ? t : t === undefined ? [] : [t]) types.add(one as JsonType);
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const members = schema[key];
    if (Array.isArray(members)) for (const m of members) for (const one of typesOf(m as JsonSchema, depth + 1)) types.add(one);
  }
  const values = "const" in schema ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : [];
  for (const value of values) types.add(value === null ? "null" : Array.isArray(value) ? "array" : (typeof value as JsonType));
  return types;
}

/** The array member of a schema: itself, or the first array member of a union. */
function arrayMemberOf(schema: JsonSchema | undefined, depth = 0): JsonSchema | undefined {
  if (!schema || typeof schema !== "object" || depth > 8) return undefined;
  if (schema.type === "array") return schema;
  for (const key of ["anyOf", "oneOf"] as const) {
    const members = schema[key];
    if (!Array.isArray(members)) continue;
    for (const m of members) {
      const found = arrayMemberOf(m as JsonSchema, depth + 1);
      if (found) return found;
    }
  }
  return undefined;
}

/** The schema of element `index` of an array schema: its tuple place (`prefixItems`), else the rest's (`items`). */
function elementSchemaOf(array: JsonSchema | undefined, index: number): JsonSchema | undefined {
  const places = Array.isArray(array?.prefixItems) ? (array.prefixItems as JsonSchema[]) : [];
  if (index < places.length) return places[index];
  return array?.items && typeof array.items === "object" && !Array.isArray(array.items) ? (array.items as JsonSchema) : undefined;
}

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
// A whole number in a query is written in decimal digits: `1e1` and `1.0` are numbers, not the
// way a count or a sequence is written, and /events never took them (readWholeNumber).
const INTEGER = /^-?\d+$/;
const DIGITS = /^\d+$/;

/** A query parameter refused before validation: the sentence to answer and the parameter it names. */
export interface QueryRefusal {
  message: string;
  suggestion?: string;
  context: { parameter: string; reason?: string };
}

/** The whole numbers a query parameter takes, `min` to `max` included. */
export interface WholeRange {
  min: number;
  max: number;
}

/** Any non-negative whole number a JavaScript number holds exactly. */
const ANY_WHOLE: WholeRange = { min: 0, max: Number.MAX_SAFE_INTEGER };

/**
 * Reads a whole number within `range` (default: any non-negative one) from query text: decimal
 * digits only (`0`, `42`, `007`). The one rule of every surface that takes one from a URL — the
 * live channel's `after` (live-target.ts) and every GET parameter whose schema is a non-negative
 * integer (`executions.events?after=`, `limit=`…) — so that `1e1`, `1.0`, `+5`, ` 5` or `-1` is
 * refused alike everywhere, never a cursor on one surface and a 400 on the other; and a
 * parameter is refused in one sentence, stating its whole range, whether its text is no number
 * (`limit=-1`) or one out of range (`limit=0`).
 */
export function readWholeNumber(name: string, raw: string, range: WholeRange = ANY_WHOLE): { ok: true; value: number } | { ok: false; refusal: QueryRefusal } {
  const value = DIGITS.test(raw) ? Number(raw) : NaN;
  if (Number.isSafeInteger(value) && value >= range.min && value <= range.max) return { ok: true, value };
  const message = `${name} must be ${wholeRule(range, raw)}, got ${JSON.stringify(raw.slice(0, 80))}.`;
  return { ok: false, refusal: { message, context: { parameter: name } } };
}

/** What `readWholeNumber` asks of a parameter, as it says it. */
function wholeRule({ min, max }: WholeRange, raw: string): string {
  if (max < Number.MAX_SAFE_INTEGER) return `a whole number from ${min} to ${max} written in decimal digits`;
  if (DIGITS.test(raw) && Number(raw) > max) return `a whole number of at most ${max}`;
  return min === 0 ? "a non-negative whole number written in decimal digits (like 0 or 42)" : `a whole number of at least ${min} written in decimal digits`;
}

/**
 * True when the input field `key` holds a secret, or may: its schema, or anything under it, is
 * marked sensitive (docs/security.md) — or, undeclared, the schema of the keys it does not declare
 * is; in any branch of a union. Such a field is never taken from a URL (URLs end up in logs, as
 * for `?token=`), nor offered as a query parameter in OpenAPI.
 */
export function holdsSecret(inputSchema: JsonSchema | undefined, key: string, depth = 0, root: JsonSchema | undefined = inputSchema): boolean {
  if (!inputSchema || typeof inputSchema !== "object" || depth > 8) return false;
  if (isSensitiveSchema(inputSchema)) return true;
  const properties = (inputSchema.properties ?? {}) as Record<string, JsonSchema>;
  const extra = inputSchema.additionalProperties;
  // A field's schema may be a reference into the input schema's $defs (a v.lazy): read from the root.
  if (Object.hasOwn(properties, key) ? hasSensitive(properties[key], root) : typeof extra === "object" && hasSensitive(extra, root)) return true;
  for (const union of ["anyOf", "oneOf", "allOf"] as const) {
    const branches = inputSchema[union];
    if (Array.isArray(branches) && branches.some((branch) => holdsSecret(branch as JsonSchema, key, depth + 1, root))) return true;
  }
  const target = refTarget(inputSchema, root);
  return target !== undefined && holdsSecret(target as JsonSchema, key, depth + 1, root);
}

/**
 * The whole numbers a schema that is a non-negative integer and nothing else takes
 * (`{type:"integer", minimum: 0}` or above, up to its maximum), or null for any other schema.
 */
function wholeRangeOf(schema: JsonSchema | undefined): WholeRange | null {
  if (!schema || schema.type !== "integer") return null;
  const { minimum, exclusiveMinimum, maximum, exclusiveMaximum } = schema;
  const min = typeof minimum === "number" ? Math.ceil(minimum) : typeof exclusiveMinimum === "number" ? Math.floor(exclusiveMinimum) + 1 : null;
  if (min === null || min < 0) return null;
  const max = typeof maximum === "number" ? Math.floor(maximum) : typeof exclusiveMaximum === "number" ? Math.ceil(exclusiveMaximum) - 1 : Number.MAX_SAFE_INTEGER;
  return { min, max: Math.min(max, Number.MAX_SAFE_INTEGER) };
}

/**
 * A query string that is not percent-encoded UTF-8 (`%FF`, `%E0%A4%A`, `%ZZ`, raw bytes that are not
 * UTF-8, which reach docket as U+FFFD), or null. URL parsing
 * would pass such a parameter on changed (U+FFFD for the bytes, a `%ZZ` as it is), and the call run
 * with a value nobody sent, where a body of the same bytes is refused. Its place only is said: a
 * value may be a secret.
 */
export function queryEncodingRefusal(search: string): QueryRefusal | null {
  const parts = (search.startsWith("?") ? search.slice(1) : search).split("&");
  for (let i = 0; i < parts.length; i++) {
    try {
      // Bytes sent raw (unencoded) that are no UTF-8 reach docket as U+FFFD already, encoded as
      // %EF%BF%BD like a real one: the replacement character is refused with them. Meant, it goes
      // in a JSON body.
      if (decodeURIComponent(parts[i]!.replaceAll("+", " ")).includes("\uFFFD")) throw new URIError("U+FFFD");
    } catch {
      return {
        message: `Parameter ${i + 1} of the query string is not percent-encoded UTF-8: each % must be followed by two hex digits, and the bytes they make must be UTF-8 text (bytes sent unencoded that are not arrive as U+FFFD, which is refused too). Nothing was run.`,
        suggestion: "Encode each name and value as UTF-8 with encodeURIComponent (curl: -G --data-urlencode name=value), or send a JSON body with POST.",
        context: { parameter: `#${i + 1}`, reason: "query_not_utf8" },
      };
    }
  }
  return null;
}

/**
 * The first GET parameter refused before the input is built, or null: one that holds a secret
 * (holdsSecret: it belongs in a POST body), or one whose schema is a non-negative integer and
 * whose text is not one of its range (readWholeNumber), named in the words /events uses for `after`.
 */
export function queryRefusal(params: URLSearchParams, inputSchema: JsonSchema): QueryRefusal | null {
  const properties = (inputSchema.properties ?? {}) as Record<string, JsonSchema>;
  for (const key of new Set(params.keys())) {
    if (holdsSecret(inputSchema, key)) {
      // Only its name is said: the value is in the URL, never repeated.
      return {
        message: `${JSON.stringify(key.slice(0, 64))} is not taken from the query string: its schema marks it sensitive, and URLs end up in logs and histories. Nothing was run.`,
        suggestion: "Send the input as a JSON body, with POST to the same path.",
        context: { parameter: key.slice(0, 64), reason: "sensitive_in_query" },
      };
    }
  }
  for (const key of new Set(params.keys())) {
    const range = Object.hasOwn(properties, key) ? wholeRangeOf(properties[key]) : null;
    if (range === null) continue;
    // A key repeated is an array where one value is wanted: validation names that mistake.
    const values = params.getAll(key);
    if (values.length !== 1) continue;
    const read = readWholeNumber(key, values[0]!, range);
    if (!read.ok) return read.refusal;
  }
  return null;
}

/** One query string value turned into the JSON type its schema wants; left a string when it cannot be (validation names it). */
function coerceScalar(raw: string, schema: JsonSchema | undefined): unknown {
  const types = typesOf(schema);
  if (types.size === 0 || types.has("string")) return raw;
  if (types.has("number") && NUMBER.test(raw)) return Number(raw);
  if (types.has("integer") && INTEGER.test(raw) && Number.isInteger(Number(raw))) return Number(raw);
  if (types.has("boolean")) {
    if (raw === "true" || raw === "1") return true;
    if (raw === "false" || raw === "0") return false;
  }
  if (types.has("null") && (raw === "null" || raw === "")) return null;
  if (types.has("object") || types.has("array")) {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  return raw;
}

/**
 * Builds a capability's input from GET query parameters, coerced by its input JSON Schema, as
 * openapi.ts publishes them: numbers, integers and booleans from text; a field whose schema is an
 * array (a tuple too) is `style: form, explode: true` — each occurrence of its key is one element,
 * exactly as sent, converted by the schema of its place (no comma list, no JSON array guessed from
 * a leading `[`: either would change a text element someone sent); an object is one JSON text, and
 * a union (published as JSON too) is read by its members, an object or array from JSON. A
 * parameter the schema does not name stays a string.
 */
export function inputFromQuery(params: URLSearchParams, inputSchema: JsonSchema): Record<string, unknown> {
  const properties = (inputSchema.properties ?? {}) as Record<string, JsonSchema>;
  const input: Record<string, unknown> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    const schema = Object.hasOwn(properties, key) ? properties[key] : undefined;
    // A union holding an array, its key repeated, reads the same way: one element per occurrence.
    const array = schema?.type === "array" ? schema : values.length > 1 ? arrayMemberOf(schema) : undefined;
    if (array) {
      put(input, key, values.map((value, i) => coerceScalar(value, elementSchemaOf(array, i))));
      continue;
    }
    // A key repeated for a non-array stays an array, so validation names the mistake.
    put(input, key, values.length === 1 ? coerceScalar(values[0]!, schema) : values.map((value) => coerceScalar(value, schema)));
  }
  return input;
}

/**
 * Sets `key` as an own member, as JSON.parse does for a body: `input["__proto__"] = …` would set
 * the object's prototype instead, and `?__proto__=1` vanished before the check of undeclared
 * fields (API tester, session 41).
 */
function put(input: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(input, key, { value, enumerable: true, writable: true, configurable: true });
}

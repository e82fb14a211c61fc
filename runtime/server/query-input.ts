import type { JsonSchema } from "../capability/registered.ts";
import { hasSensitive, isSensitiveSchema } from "../execution/redaction.ts";
import { refTarget } from "../execution/schema-refs.ts";
import { admitsString, admitsTypeOf, arrayMemberOf, elementSchemaOf, queryStyleOf, readJson, readScalar } from "./query-style.ts";

// How a whole number is written in a query: decimal digits only (readWholeNumber).
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
 * (holdsSecret: it belongs in a POST body), one whose schema is a non-negative integer and whose
 * text is not one of its range (readWholeNumber), named in the words /events uses for `after`, or
 * one published as a JSON text (query-style.ts) whose text, or an element's, is not JSON.
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
  // A text that cannot be read as openapi.json publishes its field is refused naming it: read as
  // a string instead, a union with a string member would run on a value nobody sent.
  for (const key of new Set(params.keys())) {
    if (!Object.hasOwn(properties, key)) continue;
    const read = readField(key, params.getAll(key), properties[key], inputSchema);
    if (!read.ok) return read.refusal;
  }
  return null;
}

/** A field's value as read from the query, or why it cannot be. */
type FieldRead = { ok: true; value: unknown } | { ok: false; refusal: QueryRefusal };

/**
 * One query text as the schema of its field (or of its element, `element` its place) wants it, as
 * openapi.ts publishes it (query-style.ts): a JSON text where that is the style, refused when it
 * is not JSON (read as text, `?k="a"` would be the string `"a"` with its quotes and `?k=a` a
 * string where a conforming client sends `"a"`); else the first type that takes the text, or the
 * text itself for validation to name.
 */
function readText(key: string, raw: string, schema: JsonSchema | undefined, root: JsonSchema, element?: number, asJson = false): FieldRead {
  if (!schema) return { ok: true, value: raw };
  if (!asJson && queryStyleOf(schema, root) === "form") return { ok: true, value: (readScalar(raw, schema, root) ?? { value: raw }).value };
  const json = readJson(raw);
  // An element that may be a string is written as its text in a form array (what an OpenAPI
  // client sends for `["a"]`), and as JSON when it is of another type the element takes; in a key
  // of a JSON field repeated it is JSON, a text that is none the string itself (second checking
  // tester, session 50).
  if (element !== undefined && admitsString(schema, root)) {
    const other = json !== undefined && typeof json.value !== "string" && admitsTypeOf(schema, root, json.value);
    if (other || (asJson && json !== undefined)) return { ok: true, value: json!.value };
    return { ok: true, value: raw };
  }
  if (json) return { ok: true, value: json.value };
  const shown = JSON.stringify(raw.slice(0, 80));
  const name = JSON.stringify(key.slice(0, 64));
  return {
    ok: false,
    refusal: {
      message:
        element === undefined
          ? `${name} is one JSON text, as openapi.json publishes it (content: application/json), and ${shown} is not JSON. Nothing was run.`
          : `Each occurrence of ${name} in the query string is one element, and this array's elements are JSON texts (an object, an array or a union holding one): element ${element} (${key.slice(0, 64)}[${element}]), ${shown}, is not JSON. Nothing was run.`,
      suggestion: `Write it as JSON, percent-encoded: a string in double quotes (${key.slice(0, 64)}=%22text%22), an object or an array as JSON (curl: -G --data-urlencode '${key.slice(0, 64)}=…'); or send a JSON body with POST.`,
      context: { parameter: key.slice(0, 64), reason: "query_not_json" },
    },
  };
}

/**
 * One field from all the occurrences of its key: an array field (and a union holding one, its key
 * repeated) one element per occurrence, converted by the schema of its place; any other one value,
 * or the values of a key repeated as they are, for validation to name the mistake.
 */
function readField(key: string, values: string[], schema: JsonSchema | undefined, root: JsonSchema): FieldRead {
  const style = schema === undefined ? "form" : queryStyleOf(schema, root);
  const array = schema !== undefined && (style === "array" || values.length > 1) ? arrayMemberOf(schema, root) : undefined;
  // A field published as one JSON text, its key repeated: each occurrence is a JSON text too (a string in it quoted).
  const reads = values.map((raw, i) => (array ? readText(key, raw, elementSchemaOf(array, i), root, i, style === "json") : readText(key, raw, schema, root)));
  const refused = reads.find((read) => !read.ok);
  if (refused) return refused;
  const read = reads.map((one) => (one as { value: unknown }).value);
  return { ok: true, value: array || values.length > 1 ? read : read[0] };
}

/**
 * Builds a capability's input from GET query parameters, coerced by its input JSON Schema, as
 * openapi.ts publishes them (query-style.ts): numbers, integers and booleans from text; a field
 * whose schema is an array (a tuple, a `v.lazy` one too) is `style: form, explode: true` — each
 * occurrence of its key is one element, exactly as sent, converted by the schema of its place (no
 * comma list, no JSON array guessed from a leading `[`: either would change a text element someone
 * sent); a field that can hold an object or array otherwise (an object, a variant, a union or an
 * intersection holding one) is one JSON text; a union of scalars is read by its first member that
 * takes the text. A parameter the schema does not name stays a string. A text that cannot be read
 * as published (queryRefusal refuses it first) is left as sent.
 */
export function inputFromQuery(params: URLSearchParams, inputSchema: JsonSchema): Record<string, unknown> {
  const properties = (inputSchema.properties ?? {}) as Record<string, JsonSchema>;
  const input: Record<string, unknown> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    const read = readField(key, values, Object.hasOwn(properties, key) ? properties[key] : undefined, inputSchema);
    put(input, key, read.ok ? read.value : values.length === 1 ? values[0] : values);
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

import type { JsonSchema } from "../capability/registered.ts";
import { withRefs } from "../execution/schema-refs.ts";

type JsonType = "string" | "number" | "integer" | "boolean" | "null" | "object" | "array";

/**
 * How a GET takes an input field, one rule for openapi.ts (what it publishes) and query-input.ts
 * (how it reads):
 * - `array`: a schema that is an array (a tuple too), `style: form, explode: true`: each
 *   occurrence of the key is one element;
 * - `json`: one that can hold an object or an array otherwise (an object, a union or intersection
 *   with such a member), `content: application/json`: the value is one JSON text, a string in it
 *   quoted;
 * - `form`: every other (a scalar, a union of scalars, an enum, any), `style: form`: the text as
 *   sent, read by the first member of a union, in its declared order, that takes it.
 * A `$ref` (a `v.lazy`) is followed, in the field and in its members, against `root`.
 */
export type QueryStyle = "array" | "json" | "form";

// Unions nest, and refs may loop (a recursive schema): every walk stops at this depth.
const MAX_DEPTH = 8;

/** The node with its `$ref` chain followed (withRefs), or undefined for no schema. */
function resolve(schema: unknown, root: JsonSchema): JsonSchema | undefined {
  return schema && typeof schema === "object" && !Array.isArray(schema) ? withRefs(schema as JsonSchema, root) : undefined;
}

/** The JSON types a schema admits, looking through refs, `anyOf`/`oneOf`/`allOf`, `const` and `enum`. */
function typesOf(schema: unknown, root: JsonSchema, depth = 0): Set<JsonType> {
  const types = new Set<JsonType>();
  const node = resolve(schema, root);
  if (!node || depth > MAX_DEPTH) return types;
  const t = node.type;
  for (const one of Array.isArray(t) ? t : t === undefined ? [] : [t]) types.add(one as JsonType);
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const members = node[key];
    if (Array.isArray(members)) for (const m of members) for (const one of typesOf(m, root, depth + 1)) types.add(one);
  }
  const values = "const" in node ? [node.const] : Array.isArray(node.enum) ? node.enum : [];
  for (const value of values) types.add(jsonTypeOf(value));
  return types;
}

/**
 * Whether a schema may take a value of the JSON type of `value` (refs and members followed; no
 * type at all takes any), not whether it validates: which reading of a text to keep.
 */
export function admitsTypeOf(schema: unknown, root: JsonSchema, value: unknown): boolean {
  const types = typesOf(schema, root);
  if (types.size === 0) return true;
  const type = jsonTypeOf(value);
  return types.has(type) || (type === "number" && types.has("integer") && Number.isInteger(value)) || (type === "number" && types.has("number"));
}

/** Whether a schema may take a string (see admitsTypeOf). */
export function admitsString(schema: unknown, root: JsonSchema): boolean {
  return typesOf(schema, root).has("string");
}

function jsonTypeOf(value: unknown): JsonType {
  return value === null ? "null" : Array.isArray(value) ? "array" : (typeof value as JsonType);
}

/** How a GET takes a field of this schema (see QueryStyle). */
export function queryStyleOf(schema: unknown, root: JsonSchema): QueryStyle {
  const node = resolve(schema, root);
  if (node?.type === "array") return "array";
  const types = typesOf(node, root);
  return types.has("object") || types.has("array") ? "json" : "form";
}

/**
 * The array member of a schema: itself, or the first array member of a union or intersection (its
 * elements are read by that member; validation holds them to the others), refs followed.
 */
export function arrayMemberOf(schema: unknown, root: JsonSchema, depth = 0): JsonSchema | undefined {
  const node = resolve(schema, root);
  if (!node || depth > MAX_DEPTH) return undefined;
  if (node.type === "array") return node;
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const members = node[key];
    if (!Array.isArray(members)) continue;
    for (const m of members) {
      const found = arrayMemberOf(m, root, depth + 1);
      if (found) return found;
    }
  }
  return undefined;
}

/** The schema of element `index` of an array schema: its tuple place (`prefixItems`), else the rest's (`items`). */
export function elementSchemaOf(array: JsonSchema, index: number): JsonSchema | undefined {
  const places = Array.isArray(array.prefixItems) ? (array.prefixItems as JsonSchema[]) : [];
  if (index < places.length) return places[index];
  return array.items && typeof array.items === "object" && !Array.isArray(array.items) ? (array.items as JsonSchema) : undefined;
}

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
// A whole number in a query is written in decimal digits: `1e1` and `1.0` are numbers, not the
// way a count or a sequence is written, and /events never took them (readWholeNumber).
const INTEGER = /^-?\d+$/;

/** Query text as one JSON type, or undefined when it is not written as one. */
function readAs(raw: string, type: JsonType): { value: unknown } | undefined {
  if (type === "string") return { value: raw };
  if (type === "number" && NUMBER.test(raw)) return { value: Number(raw) };
  if (type === "integer" && INTEGER.test(raw)) return { value: Number(raw) };
  if (type === "boolean" && (raw === "true" || raw === "1")) return { value: true };
  if (type === "boolean" && (raw === "false" || raw === "0")) return { value: false };
  if (type === "null" && (raw === "null" || raw === "")) return { value: null };
  return undefined;
}

/**
 * Query text as the value a scalar schema takes: a listed value (`const`, `enum`) written so, else
 * its type(s) in order, else the first member of a union that takes it (valibot's own order for
 * `v.union`: `string | number` reads `5` as "5", `number | string` as 5). Undefined when nothing
 * takes it: the text is left for validation to name.
 */
export function readScalar(raw: string, schema: unknown, root: JsonSchema, depth = 0): { value: unknown } | undefined {
  const node = resolve(schema, root);
  if (!node || depth > MAX_DEPTH) return undefined;
  const listed = "const" in node ? [node.const] : Array.isArray(node.enum) ? node.enum : null;
  if (listed) {
    const value = listed.find((one) => readAs(raw, jsonTypeOf(one))?.value === one);
    return value === undefined ? undefined : { value };
  }
  const types = Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type];
  for (const type of types) {
    const read = readAs(raw, type as JsonType);
    if (read) return read;
  }
  for (const key of ["anyOf", "oneOf"] as const) {
    const members = node[key];
    if (!Array.isArray(members)) continue;
    for (const member of members) {
      const read = readScalar(raw, member, root, depth + 1);
      if (read) return read;
    }
  }
  const all = Array.isArray(node.allOf) ? node.allOf : [];
  // An intersection takes the text only if each of its members does.
  const reads = all.map((member) => readScalar(raw, member, root, depth + 1));
  if (reads.length > 0) return reads.every((read) => read !== undefined) ? reads[0] : undefined;
  // A schema that names no type (`{}`, v.unknown) takes the text as it is.
  return types.length === 0 && !Array.isArray(node.anyOf) && !Array.isArray(node.oneOf) ? { value: raw } : undefined;
}

/** Query text as JSON, or undefined when it is not JSON. */
export function readJson(raw: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(raw) };
  } catch {
    return undefined;
  }
}

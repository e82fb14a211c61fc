import * as v from "valibot";
import { schemaNodes } from "./schema-nodes.ts";
import { SENSITIVE_MARK } from "./sensitive.ts";

type SchemaNode = Record<string, unknown>;

/**
 * A copy of a valibot schema, for conversion to JSON Schema alone, in which every pipe that marks
 * its value a secret anywhere (`sensitive()`, or metadata `writeOnly: true` / `format: "password"`)
 * carries that mark right after each of its schemas. The converter reads a pipe only from its first
 * schema to the first transform (input) or from its last schema on (output), so
 * `sensitive(v.pipe(v.string(), v.transform(f), v.string()))` or a mark after the transform was
 * dropped, and a secret was stored in clear (docs/security.md). A transformed secret is still a
 * secret: wherever the mark sits in a pipe, the whole value is one; and so is a value a pipe
 * transforms into something holding a mark. A schema with no mark is returned as it is; the copy
 * is never parsed with.
 */
export function secretPipes<T>(schema: T): T {
  let marked = false;
  for (const node of schemaNodes(schema)) {
    if (secretKeys(node) !== null) {
      marked = true;
      break;
    }
  }
  if (!marked) return schema;
  const copies = new Map<object, SchemaNode>();

  const copySchema = (node: SchemaNode): SchemaNode => {
    const known = copies.get(node);
    if (known) return known;
    // Descriptors keep valibot's getters (`~standard`) as getters of the copy.
    const copy = Object.create(Object.getPrototypeOf(node), Object.getOwnPropertyDescriptors(node)) as SchemaNode;
    copies.set(node, copy);
    for (const key of Object.keys(node)) {
      if (key === "~standard" || key === "pipe") continue;
      const value = node[key];
      if (key === "getter" && node.type === "lazy" && typeof value === "function") {
        // A recursive schema is copied as the converter walks it: the copy of a node is one object,
        // so the converter's own memory of what it converted still ends the recursion.
        copy.getter = (input: unknown) => copyChild((value as (input: unknown) => unknown)(input));
      } else copy[key] = copyChild(value);
    }
    if (Array.isArray(node.pipe)) copy.pipe = copyPipe(node.pipe as SchemaNode[]);
    return copy;
  };

  /** A child of a schema: a schema, a list of them (items, options), or a record of them (entries). */
  const copyChild = (value: unknown): unknown => {
    if (isSchema(value)) return copySchema(value);
    if (Array.isArray(value)) return value.some(isSchema) ? value.map((item) => (isSchema(item) ? copySchema(item) : item)) : value;
    if (isPlainRecord(value) && Object.values(value).some(isSchema)) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, isSchema(item) ? copySchema(item) : item]));
    }
    return value;
  };

  const copyPipe = (pipe: SchemaNode[]): SchemaNode[] => {
    const flat = flatten(pipe);
    const keys = Object.assign({}, ...flat.map((item) => secretKeys(item) ?? {})) as Record<string, unknown>;
    // What a transform makes holds a secret (`v.pipe(v.string(), v.transform(JSON.parse),
    // v.object({ token: sensitive(v.string()) }))`): the value sent holds it too, in a form its
    // input schema cannot point into, so the whole value is the secret.
    const transformedAt = flat.findIndex((item) => item.kind === "transformation");
    if (transformedAt >= 0 && flat.slice(transformedAt + 1).some((item) => isSchema(item) && holdsMark(item))) keys[SENSITIVE_MARK] = true;
    if (Object.keys(keys).length === 0) return pipe.map((item) => (isSchema(item) ? copySchema(item) : item));
    const mark = v.metadata(keys) as unknown as SchemaNode;
    return flat.flatMap((item) => (isSchema(item) ? [copySchema(item), mark] : [item]));
  };

  return copySchema(schema as SchemaNode) as T;
}

/** The keys of a metadata action that mark a value a secret, as the engine reads them in JSON Schema; null for any other node. */
function secretKeys(node: SchemaNode): Record<string, unknown> | null {
  if (node.kind !== "metadata" || !isPlainRecord(node.metadata)) return null;
  const metadata = node.metadata;
  const keys: Record<string, unknown> = {};
  if (metadata[SENSITIVE_MARK] === true) keys[SENSITIVE_MARK] = true;
  if (metadata.writeOnly === true) keys.writeOnly = true;
  if (metadata.format === "password") keys.format = "password";
  return Object.keys(keys).length > 0 ? keys : null;
}

/** True when a mark sits anywhere inside a schema (a field of an object, an item, a branch, a lazy part). */
function holdsMark(schema: SchemaNode): boolean {
  for (const node of schemaNodes(schema)) if (secretKeys(node) !== null) return true;
  return false;
}

/** A pipe with the pipes inside it spread in place, as the converter reads it. */
function flatten(pipe: SchemaNode[]): SchemaNode[] {
  return pipe.flatMap((item) => (Array.isArray(item.pipe) ? flatten(item.pipe as SchemaNode[]) : [item]));
}

function isSchema(value: unknown): value is SchemaNode {
  return typeof value === "object" && value !== null && (value as SchemaNode).kind === "schema";
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

import type { JsonSchema } from "../capability/registered.ts";

/**
 * The schema a node's `$ref` points to inside `root`, or undefined when the node has no `$ref` or
 * it points nowhere in the document. A recursive schema (`v.lazy`) is published with its repeated
 * part under `$defs` and `{ "$ref": "#/$defs/0" }` where it recurs, so every walker of an input
 * schema that decides what is a secret or a field follows these (docs/security.md). Only a
 * document-local reference (`#`, `#/$defs/…`, any JSON Pointer) is followed: that is all the
 * converter writes, and nothing outside the capability's own schema is ever fetched.
 */
export function refTarget(schema: unknown, root: unknown): JsonSchema | undefined {
  if (schema === null || typeof schema !== "object") return undefined;
  const ref = (schema as JsonSchema).$ref;
  if (typeof ref !== "string" || !ref.startsWith("#")) return undefined;
  let at: unknown = root;
  const pointer = safeDecode(ref.slice(1));
  if (pointer === null || (pointer !== "" && !pointer.startsWith("/"))) return undefined;
  for (const raw of pointer === "" ? [] : pointer.slice(1).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at !== null && typeof at === "object" && !Array.isArray(at) ? (at as JsonSchema) : undefined;
}

/**
 * The node with its `$ref` chain merged in, the node's own keywords over its target's (a mark or a
 * description written beside the `$ref`): what a reader of one node at a time (the cockpit's form)
 * sees. A chain that comes back to a node it passed (a `$ref` to itself) stops there.
 */
export function withRefs(schema: JsonSchema, root: unknown): JsonSchema {
  let merged: JsonSchema = schema;
  const passed = new Set<unknown>([schema]);
  for (let target = refTarget(schema, root); target !== undefined && !passed.has(target); target = refTarget(target, root)) {
    passed.add(target);
    const { $ref: _ref, ...own } = merged;
    merged = { ...target, ...own, $ref: target.$ref };
  }
  const { $ref: _ref, ...resolved } = merged;
  return merged === schema ? schema : resolved;
}

function safeDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

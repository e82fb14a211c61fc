import type { JsonSchema } from "../capability/registered.ts";
import { refTarget } from "./schema-refs.ts";

/** What replaces a sensitive value everywhere but in the handler's hands (docs/handler-api.md). */
export const REDACTED = "[redacted]";

/** True when the schema itself marks its value a secret. Never decided by a field's name. */
export function isSensitiveSchema(schema: JsonSchema | undefined): boolean {
  if (!schema || typeof schema !== "object") return false;
  return schema.format === "password" || schema.writeOnly === true || schema["x-docket-sensitive"] === true;
}

// What hasSensitive found for each schema it walked, by the document its references resolve in. A
// registered schema is never changed once built, so the answer stands for its life; without this,
// every start and call walked its capability's whole input schema (and executions.start's) several times.
const sensitiveBySchema = new WeakMap<object, WeakMap<object, boolean>>();

/**
 * True when the schema or anything under it marks a secret (then `redact` must walk the value),
 * following its `$ref`s into `root`, the document it is part of (itself by default).
 */
export function hasSensitive(schema: unknown, root: unknown = schema): boolean {
  if (!schema || typeof schema !== "object") return false;
  const documentRoot = root !== null && typeof root === "object" ? root : schema;
  let known = sensitiveBySchema.get(documentRoot);
  if (!known) sensitiveBySchema.set(documentRoot, (known = new WeakMap()));
  const cached = known.get(schema);
  if (cached !== undefined) return cached;
  // Every node reachable, through children and references, once: a recursive schema is a cycle.
  const seen = new Set<object>();
  const stack: object[] = [schema];
  let found = false;
  while (stack.length > 0 && !found) {
    const node = stack.pop()!;
    if (seen.has(node)) continue;
    seen.add(node);
    if (!Array.isArray(node) && isSensitiveSchema(node as JsonSchema)) found = true;
    for (const child of Object.values(node)) if (child !== null && typeof child === "object") stack.push(child);
    const target = Array.isArray(node) ? undefined : refTarget(node, documentRoot);
    if (target) stack.push(target);
  }
  known.set(schema, found);
  return found;
}

/** Branches applying at one value's position: anyOf, oneOf and allOf. `$ref` is followed beside them. */
const BRANCHES = ["anyOf", "oneOf", "allOf"] as const;

/**
 * A copy of `value` with every value the schema marks sensitive replaced by `"[redacted]"`, at any
 * depth: object properties, additional properties, array items and tuples, an object whose keys
 * it marks (`propertyNames`) when it has any it does not declare, every branch of
 * anyOf / oneOf / allOf (a value that could match a sensitive branch is redacted: when in doubt,
 * hide), and every `$ref` into `root`, the document the schema is part of (a recursive schema's
 * `$defs`; itself by default). Each reference is followed once per place in the value, so a
 * cycle of them ends; the value, whose depth admission bounds, bounds the rest.
 */
export function redact(value: unknown, schema: JsonSchema | undefined, root: unknown = schema): unknown {
  return redactAt(value, schema, root, new Set(), undefined);
}

/**
 * `followed`: the references already applied to this very value (redacting twice changes nothing);
 * `around`: the names the branches around this one declare for the same value.
 */
function redactAt(value: unknown, schema: JsonSchema | undefined, root: unknown, followed: Set<object>, around: ReadonlySet<string> | undefined): unknown {
  if (!schema || typeof schema !== "object" || value === undefined) return value;
  if (isSensitiveSchema(schema)) return value === null ? null : REDACTED;
  let result: unknown = value;
  const names = namesAround(value, schema, root, around);
  for (const key of BRANCHES) {
    const branches = schema[key];
    if (Array.isArray(branches)) {
      for (const branch of branches) result = redactAt(result, branch as JsonSchema, root, followed, names);
    }
  }
  const target = refTarget(schema, root);
  if (target && !followed.has(target)) {
    followed.add(target);
    result = redactAt(result, target, root, followed, names);
  }
  if (Array.isArray(result)) {
    const prefix = Array.isArray(schema.prefixItems) ? (schema.prefixItems as JsonSchema[]) : [];
    const items = schema.items && typeof schema.items === "object" && !Array.isArray(schema.items) ? (schema.items as JsonSchema) : undefined;
    const tuple = Array.isArray(schema.items) ? (schema.items as JsonSchema[]) : prefix;
    return result.map((item, i) => redactAt(item, tuple[i] ?? items, root, new Set(), undefined));
  }
  if (result && typeof result === "object") {
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    // Keys the schema marks secret (a record's `propertyNames`): a key it does not declare is
    // the secret itself, and a key cannot be replaced by a mark without colliding or naming it
    // in a path, so the whole object is hidden.
    if (secretKeys(schema, root) && Object.keys(result).some((k) => !Object.hasOwn(properties, k) && !around?.has(k))) return REDACTED;
    const extra = schema.additionalProperties && typeof schema.additionalProperties === "object" ? (schema.additionalProperties as JsonSchema) : undefined;
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(result as Record<string, unknown>)) {
      copy[k] = redactAt(v, (Object.hasOwn(properties, k) ? properties[k] : undefined) ?? extra, root, new Set(), undefined);
    }
    return copy;
  }
  return result;
}

/**
 * The property names a schema declares, in itself and in each branch of its anyOf / oneOf / allOf
 * and each schema its `$ref` leads to (in `root`), each of those once.
 */
export function declaredNames(schema: JsonSchema | undefined, root: unknown, names = new Set<string>(), passed = new Set<object>()): Set<string> {
  if (!schema || typeof schema !== "object" || passed.has(schema)) return names;
  passed.add(schema);
  if (schema.properties && typeof schema.properties === "object") for (const name of Object.keys(schema.properties)) names.add(name);
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const branches = schema[key];
    if (Array.isArray(branches)) for (const branch of branches) declaredNames(branch as JsonSchema, root, names, passed);
  }
  declaredNames(refTarget(schema, root), root, names, passed);
  return names;
}

/**
 * The names declared for an object `value` by `schema`'s branches and references, with those of
 * the branches around it (`around`): what each branch takes as published, not as a secret key. A
 * name one branch declares is published with the schema, for every branch: an intersect of an
 * object and a record whose keys are secret does not hide the object's fields (checking tester,
 * session 47). `around` itself when the schema has no branch or the value is no object.
 */
export function namesAround(value: unknown, schema: JsonSchema, root: unknown, around: ReadonlySet<string> | undefined): ReadonlySet<string> | undefined {
  const branched = BRANCHES.some((key) => Array.isArray(schema[key])) || schema.$ref !== undefined;
  return branched && value !== null && typeof value === "object" && !Array.isArray(value) ? declaredNames(schema, root, new Set(around)) : around;
}

/** True when the schema marks an object's keys secret: its `propertyNames` (`v.record(sensitive(v.string()), …)`), or anything under them. */
export function secretKeys(schema: JsonSchema, root: unknown): boolean {
  const names = schema.propertyNames;
  return names !== null && typeof names === "object" && hasSensitive(names, root);
}

/**
 * True when `value` holds something (not null) at a place the schema marks sensitive: an input
 * that was given a secret, of which a store keeps only "[redacted]". Every leaf is first made the
 * number 0, so the only strings `redact` leaves are its own marks.
 */
export function holdsSensitive(value: unknown, schema: JsonSchema | undefined): boolean {
  if (!hasSensitive(schema)) return false;
  const hasMark = (node: unknown): boolean =>
    node === REDACTED || (node !== null && typeof node === "object" && Object.values(node).some(hasMark));
  return hasMark(redact(leavesAsZero(value), schema));
}

/** `value` with every string, number and boolean in it the number 0: its shape, none of its text. */
function leavesAsZero(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(leavesAsZero);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, leavesAsZero(v)]));
  return value === null || value === undefined ? value : 0;
}

/** Every property name a schema document declares anywhere (its `$defs` too): names published with it. */
const publishedBySchema = new WeakMap<object, Set<string>>();
function publishedNames(schema: JsonSchema): Set<string> {
  const known = publishedBySchema.get(schema);
  if (known) return known;
  const names = new Set<string>();
  const seen = new Set<object>();
  const stack: object[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (seen.has(node)) continue;
    seen.add(node);
    const properties = (node as JsonSchema).properties;
    if (!Array.isArray(node) && properties && typeof properties === "object") for (const name of Object.keys(properties)) names.add(name);
    for (const child of Object.values(node)) if (child !== null && typeof child === "object") stack.push(child);
  }
  publishedBySchema.set(schema, names);
  return names;
}

/**
 * For a value and its schema, a test of whether the last key of a path is a secret itself: a key,
 * under a place the schema marks sensitive, that the schema declares nowhere (a key of
 * `v.record(sensitive(v.string()), …)` or of a sensitive record). Validation paths write it hidden.
 */
export function secretKeyPaths(value: unknown, schema: JsonSchema): (path: Array<string | number>) => boolean {
  const secretAt = sensitivePaths(value, schema);
  const published = publishedNames(schema);
  return (path) => {
    const last = path[path.length - 1];
    return path.length > 1 && typeof last === "string" && !published.has(last) && secretAt(path.slice(0, -1));
  };
}

/**
 * For a value and its schema, a test of whether a path leads to (or into) a value the schema marks
 * sensitive: what validation messages use to avoid quoting a secret back.
 */
export function sensitivePaths(value: unknown, schema: JsonSchema): (path: Array<string | number>) => boolean {
  const redacted = redact(value, schema);
  return (path) => {
    let current: unknown = redacted;
    if (current === REDACTED) return true;
    for (const key of path) {
      if (current === null || typeof current !== "object") return false;
      current = (current as Record<string | number, unknown>)[key];
      if (current === REDACTED) return true;
    }
    return false;
  };
}

import type { JsonSchema } from "../capability/registered.ts";

/** What replaces a sensitive value everywhere but in the handler's hands (docs/handler-api.md). */
export const REDACTED = "[redacted]";

/** True when the schema itself marks its value a secret. Never decided by a field's name. */
export function isSensitiveSchema(schema: JsonSchema | undefined): boolean {
  if (!schema || typeof schema !== "object") return false;
  return schema.format === "password" || schema.writeOnly === true || schema["x-docket-sensitive"] === true;
}

// What hasSensitive found for each schema it walked. A registered schema is never changed once
// built, so the answer stands for its life; without this, every start and call walked its
// capability's whole input schema (and executions.start's) several times.
const sensitiveBySchema = new WeakMap<object, boolean>();

/** True when the schema or anything under it marks a secret (then `redact` must walk the value). */
export function hasSensitive(schema: unknown): boolean {
  if (!schema || typeof schema !== "object") return false;
  const known = sensitiveBySchema.get(schema);
  if (known !== undefined) return known;
  const found = isSensitiveSchema(schema as JsonSchema) || Object.values(schema as object).some((child) => hasSensitive(child));
  sensitiveBySchema.set(schema, found);
  return found;
}

/**
 * A copy of `value` with every value the schema marks sensitive replaced by `"[redacted]"`, at any
 * depth: object properties, additional properties, array items and tuples, and every branch of
 * anyOf / oneOf / allOf (a value that could match a sensitive branch is redacted: when in doubt, hide).
 */
export function redact(value: unknown, schema: JsonSchema | undefined): unknown {
  if (!schema || typeof schema !== "object" || value === undefined) return value;
  if (isSensitiveSchema(schema)) return value === null ? null : REDACTED;
  let result: unknown = value;
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const branches = schema[key];
    if (Array.isArray(branches)) {
      for (const branch of branches) result = redact(result, branch as JsonSchema);
    }
  }
  if (Array.isArray(result)) {
    const prefix = Array.isArray(schema.prefixItems) ? (schema.prefixItems as JsonSchema[]) : [];
    const items = schema.items && typeof schema.items === "object" && !Array.isArray(schema.items) ? (schema.items as JsonSchema) : undefined;
    const tuple = Array.isArray(schema.items) ? (schema.items as JsonSchema[]) : prefix;
    return result.map((item, i) => redact(item, tuple[i] ?? items));
  }
  if (result && typeof result === "object") {
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    const extra = schema.additionalProperties && typeof schema.additionalProperties === "object" ? (schema.additionalProperties as JsonSchema) : undefined;
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(result as Record<string, unknown>)) {
      copy[k] = redact(v, properties[k] ?? extra);
    }
    return copy;
  }
  return result;
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

import type { JsonSchema } from "../runtime/capability/registered.ts";
import { hasSensitive, holdsSensitive, isSensitiveSchema } from "../runtime/execution/redaction.ts";
import { schemaBranches } from "../runtime/execution/undeclared-fields.ts";
import { SENSITIVE_MARK } from "../runtime/capability/sensitive.ts";

/** At most this many values of the JSON are looked at; past it, it is taken as holding a secret. */
const MAX_VISITS = 100_000;

/**
 * Whether raw JSON typed for `schema` may hold a secret, so that the cockpit does not fill it in
 * again (docs/security.md): the schema has a sensitive place, and the JSON gives it a value, is
 * not JSON enough to tell, or is not the schema's shape at some depth — a field the schema does
 * not declare (`{"input":{"token":…}}`, a misspelt name, one inside a record's value), or a value
 * of another kind than the schema takes there (a string or an array where an object goes): a
 * secret sent in the wrong place is one all the same (containment testers, session 42).
 */
export function mayHoldSecret(json: string, schema: JsonSchema): boolean {
  if (!hasSensitive(schema)) return false;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return true;
  }
  return holdsSensitive(value, schema) || !fitsShape(value, schema);
}

/** Whether `value` is of a kind its schema takes, with only the fields it declares, at every depth. */
function fitsShape(value: unknown, schema: JsonSchema): boolean {
  let visits = 0;
  // `exact`: a value must be the literal or one of the picklist's own (a variant's key, which picks
  // its branch); otherwise only of its kind — a wrong choice in a picklist is no secret.
  const fits = (member: unknown, node: unknown, exact = false): boolean => {
    if (++visits > MAX_VISITS) return false;
    // null gives no place a value; a node that says nothing takes anything.
    if (member === null) return true;
    // An intersection (allOf) takes what its parts take together: one object of their fields.
    const merged = intersection(node);
    const branches = schemaBranches(merged ?? node, schema);
    if (branches.length === 0) return true;
    // What a sensitive place holds is the secret's (holdsSensitive says whether there is one).
    if (branches.some((branch) => isSensitiveSchema(branch as JsonSchema) || (branch as Record<string, unknown>)[SENSITIVE_MARK] === true)) return true;
    return branches.some((branch) => fitsBranch(member, branch as JsonSchema, fits, exact, branches.length > 1));
  };
  return fits(value, schema);
}

/** An allOf of objects as one object holding all their fields; null for any other node. */
function intersection(node: unknown): JsonSchema | null {
  const parts = (node as { allOf?: unknown } | null)?.allOf;
  if (!Array.isArray(parts) || parts.length === 0) return null;
  const objects = parts as Array<{ type?: unknown; properties?: Record<string, unknown> }>;
  if (!objects.every((part) => part !== null && typeof part === "object" && part.type === "object")) return null;
  return { type: "object", properties: Object.assign({}, ...objects.map((part) => part.properties ?? {})) } as JsonSchema;
}

/** Whether `value` fits one branch of a schema node (no union left in it). */
function fitsBranch(value: unknown, branch: JsonSchema, fits: (member: unknown, node: unknown, exact?: boolean) => boolean, exact: boolean, oneOfSeveral: boolean): boolean {
  // A literal (const) or a picklist (enum): its values, or values of their kind.
  const { const: only, enum: among } = branch as { const?: unknown; enum?: unknown[] };
  const allowed = "const" in branch ? [only] : Array.isArray(among) ? among : null;
  const same = (a: unknown, b: unknown) => (exact ? JSON.stringify(a) === JSON.stringify(b) : sameKind(kindOf(a), kindOf(b)));
  if (allowed !== null && !allowed.some((member) => same(member, value))) return false;
  const types = branch.type === undefined ? null : ([] as unknown[]).concat(branch.type);
  const kind = kindOf(value);
  if (types !== null && !types.includes(kind) && !(kind === "integer" && types.includes("number"))) return false;
  if (Array.isArray(value)) {
    // A tuple's places (prefixItems), then its rest (items): an item past the places with no rest
    // is one the schema does not declare.
    const { prefixItems: places, items } = branch as { prefixItems?: unknown[]; items?: unknown };
    const fixed = Array.isArray(places) ? places : [];
    return value.every((member, at) => {
      if (at < fixed.length) return fits(member, fixed[at]);
      if (items === undefined) return fixed.length === 0;
      return items !== false && fits(member, items);
    });
  }
  if (kind !== "object") return true;
  const { properties, additionalProperties, patternProperties } = branch as { properties?: Record<string, unknown>; additionalProperties?: unknown; patternProperties?: unknown };
  // A pattern's fields are not matched here: taken as any field, as the input's check reads them.
  if (patternProperties !== undefined) return true;
  for (const [key, member] of Object.entries(value as Record<string, unknown>)) {
    // Redaction cannot follow a "__proto__" key (it would set a prototype): nothing under it is told apart.
    if (key === "__proto__") return false;
    if (properties !== undefined && Object.hasOwn(properties, key)) {
      // One object of several (a variant's): its keys' literals decide which it is.
      if (!fits(member, properties[key], oneOfSeveral)) return false;
    } else if (additionalProperties !== undefined && additionalProperties !== false) {
      if (additionalProperties !== true && !fits(member, additionalProperties)) return false;
    } else if (properties !== undefined || additionalProperties === false) {
      return false;
    }
  }
  return true;
}

/** A JSON value's kind, as JSON Schema's `type` names it. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function sameKind(a: string, b: string): boolean {
  return a === b || (a === "integer" && b === "number") || (a === "number" && b === "integer");
}

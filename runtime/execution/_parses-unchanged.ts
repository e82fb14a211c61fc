import type { AnySchema } from "../capability/declaration.ts";

/** What a valibot parse would do with a value, as far as {@link parsesUnchanged} can tell without running it. */
const Verdict = {
  /** It passes, and the output equals the value: same members, same order, nothing defaulted or dropped. */
  Unchanged: 0,
  /** It certainly fails. */
  Rejected: 1,
  /** Anything else (a transformation, a check this file does not mirror, a member to drop): valibot decides. */
  Unsure: 2,
} as const;
type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** The schema fields this file reads; every valibot schema has `type`, the rest depend on it. */
interface SchemaShape {
  type: string;
  pipe?: ReadonlyArray<PipeItem>;
  fallback?: unknown;
  default?: unknown;
  wrapped?: SchemaShape;
  entries?: Record<string, SchemaShape>;
  item?: SchemaShape;
  options?: readonly unknown[];
  literal?: unknown;
}

/** An item of a pipe: its first schema, then actions (`requirement` as valibot's checks hold it). */
interface PipeItem {
  kind: string;
  type: string;
  requirement?: unknown;
}

/** The declared member names of an object schema, in order and as a set; schemas never change. */
const declaredOf = new WeakMap<object, { keys: string[]; set: Set<string> }>();

/**
 * True when parsing `value` with `schema` certainly succeeds and gives back a value equal to it
 * (members in the same order), so the parse can be skipped and `value` used as its output. False
 * says nothing: parse it. Handler outputs are checked on every completion and every direct call;
 * valibot copies each object it walks and allocates a dataset per member — for the snapshot an
 * HTTP `executions.start` answers with, ~10 % of the server's main thread per request. This walks
 * the same schema without allocating, and mirrors valibot 1.x only for what it knows exactly
 * (plain types, picklists, literals, optional and nullable without defaults, arrays, objects,
 * loose and strict objects, unions, pipes of metadata); anything else is valibot's to decide.
 */
export function parsesUnchanged(schema: AnySchema, value: unknown): boolean {
  return verdict(schema as unknown as SchemaShape, value) === Verdict.Unchanged;
}

function verdict(schema: SchemaShape, value: unknown): Verdict {
  if (schema.fallback !== undefined) return Verdict.Unsure;
  if (schema.pipe !== undefined) return pipeVerdict(schema.pipe, value);
  switch (schema.type) {
    case "string":
      return typeof value === "string" ? Verdict.Unchanged : Verdict.Rejected;
    case "number":
      return typeof value === "number" && !Number.isNaN(value) ? Verdict.Unchanged : Verdict.Rejected;
    case "boolean":
      return typeof value === "boolean" ? Verdict.Unchanged : Verdict.Rejected;
    case "null":
      return value === null ? Verdict.Unchanged : Verdict.Rejected;
    case "literal":
      return value === schema.literal || (Number.isNaN(value) && Number.isNaN(schema.literal)) ? Verdict.Unchanged : Verdict.Rejected;
    case "picklist":
      return schema.options!.includes(value) ? Verdict.Unchanged : Verdict.Rejected;
    case "unknown":
    case "any":
      return Verdict.Unchanged;
    case "optional":
      if (value === undefined) return schema.default === undefined ? Verdict.Unchanged : Verdict.Unsure;
      return verdict(schema.wrapped!, value);
    case "nullable":
      if (value === null) return schema.default === undefined ? Verdict.Unchanged : Verdict.Unsure;
      return verdict(schema.wrapped!, value);
    case "array":
      return arrayVerdict(schema.item!, value);
    case "object":
    case "loose_object":
    case "strict_object":
      return objectVerdict(schema, value);
    case "union":
      // valibot takes the first option that passes: an earlier one it might pass decides first.
      for (const option of schema.options as SchemaShape[]) {
        const found = verdict(option, value);
        if (found !== Verdict.Rejected) return found;
      }
      return Verdict.Rejected;
    default:
      return Verdict.Unsure;
  }
}

/**
 * A pipe is its first schema, then actions run in order. Descriptions and titles change nothing;
 * the checks mirrored here only add an issue (valibot 1.x: min_length, max_length, regex without
 * a g or y flag, integer, min_value, max_value). Any other action may change the value: Unsure.
 */
function pipeVerdict(pipe: ReadonlyArray<PipeItem>, value: unknown): Verdict {
  const first = pipe[0] as unknown as SchemaShape | undefined;
  if (first === undefined || first.pipe !== undefined) return Verdict.Unsure;
  const found = verdict(first, value);
  if (found !== Verdict.Unchanged) return found;
  for (let i = 1; i < pipe.length; i++) {
    const item = pipe[i]!;
    if (item.kind === "metadata") continue;
    if (item.kind !== "validation") return Verdict.Unsure;
    const passes = checkPasses(item, value);
    if (passes === null) return Verdict.Unsure;
    if (!passes) return Verdict.Rejected;
  }
  return Verdict.Unchanged;
}

/** Whether a validation action lets a typed value through, as valibot runs it; null for one not mirrored. */
function checkPasses(action: PipeItem, value: unknown): boolean | null {
  const requirement = action.requirement;
  switch (action.type) {
    case "min_length":
      return !((value as { length: number }).length < (requirement as number));
    case "max_length":
      return !((value as { length: number }).length > (requirement as number));
    case "regex":
      // A global or sticky expression keeps state between tests: valibot's own run must be the only one.
      if (!(requirement instanceof RegExp) || requirement.global || requirement.sticky) return null;
      return requirement.test(value as string);
    case "integer":
      return Number.isInteger(value);
    case "min_value":
      return typeof requirement === "number" && typeof value === "number" ? value >= requirement : null;
    case "max_value":
      return typeof requirement === "number" && typeof value === "number" ? value <= requirement : null;
    default:
      return null;
  }
}

function arrayVerdict(item: SchemaShape, value: unknown): Verdict {
  if (!Array.isArray(value)) return Verdict.Rejected;
  for (let i = 0; i < value.length; i++) {
    // A hole comes back as a member holding undefined.
    if (!(i in value)) return Verdict.Unsure;
    const found = verdict(item, value[i]);
    if (found !== Verdict.Unchanged) return found;
  }
  return Verdict.Unchanged;
}

/**
 * valibot builds a new object: the declared members present (or defaulted) in declaration order,
 * then, for a loose object, the other own members in their order; an object drops those.
 */
function objectVerdict(schema: SchemaShape, value: unknown): Verdict {
  if (!value || typeof value !== "object") return Verdict.Rejected;
  const proto = Object.getPrototypeOf(value);
  if (Array.isArray(value) || (proto !== Object.prototype && proto !== null)) return Verdict.Unsure;
  const entries = schema.entries!;
  let declared = declaredOf.get(entries);
  if (declared === undefined) declaredOf.set(entries, (declared = { keys: Object.keys(entries), set: new Set(Object.keys(entries)) }));
  const { keys, set } = declared;
  const record = value as Record<string, unknown>;
  // Own enumerable string keys in order: what valibot's `for…in` over a plain object visits.
  const members = Object.keys(record);
  let next = 0;
  let at = 0;
  for (; at < members.length; at++) {
    const key = members[at]!;
    if (!set.has(key)) break;
    // Declared members come first and in declaration order, or they would move.
    for (; next < keys.length && keys[next] !== key; next++) {
      if (keys[next]! in record) return Verdict.Unsure;
      const skipped = absentVerdict(entries[keys[next]!]!);
      if (skipped !== Verdict.Unchanged) return skipped;
    }
    const found = verdict(entries[key]!, record[key]);
    if (found !== Verdict.Unchanged) return found;
    next++;
  }
  for (; next < keys.length; next++) {
    if (keys[next]! in record) return Verdict.Unsure;
    const found = absentVerdict(entries[keys[next]!]!);
    if (found !== Verdict.Unchanged) return found;
  }
  // The rest are undeclared: an object drops them, a strict object refuses them, a loose object
  // keeps them (but these three).
  if (at < members.length && schema.type === "object") return Verdict.Unsure;
  if (at < members.length && schema.type === "strict_object") return Verdict.Rejected;
  for (; at < members.length; at++) {
    const key = members[at]!;
    if (key === "__proto__" || key === "prototype" || key === "constructor") return Verdict.Unsure;
  }
  return Verdict.Unchanged;
}

/** A declared member the value does not have: fine when optional without a default, an issue when required. */
function absentVerdict(schema: SchemaShape): Verdict {
  if (schema.fallback !== undefined) return Verdict.Unsure;
  if (schema.type === "optional") return schema.default === undefined ? Verdict.Unchanged : Verdict.Unsure;
  if (schema.type === "exact_optional" || schema.type === "nullish") return Verdict.Unsure;
  return Verdict.Rejected;
}

import { didYouMean } from "../capability/did-you-mean.ts";
import type { JsonSchema } from "../capability/registered.ts";
import { isSensitiveSchema } from "./redaction.ts";
import { refTarget } from "./schema-refs.ts";
import { SENSITIVE_MARK } from "../capability/sensitive.ts";

/** At most this many values of an input are looked at for undeclared fields: a bound on the main thread's time. */
const MAX_VISITS = 100_000;

/**
 * The fields of an input that its schema does not declare, as dotted paths (`items[0].dryRun`
 * shows as `items.0.dryRun`), at most 20: what the input's check drops without a word. Read from
 * the JSON Schema, through unions (a field of any branch is declared), nullables, array items
 * and `$ref`s (a recursive schema's `$defs`); an object that takes any field (a record, `unknown`)
 * drops only the keys no check keeps (`NEVER_KEPT_KEYS`), and a record's values are looked into
 * by their own schema; a value marked sensitive is not (its member names are part of the secret),
 * however it is nested (a union, a `$ref`), though with `exact` a field its check dropped is said
 * as the secret's, unnamed. A field the check kept all the same (a loose object: its checked value
 * still holds it) is not one. `exact`: the schema has no transform, so the checked value is what
 * the check kept of the input, and a declared field missing from it was dropped (a union's other
 * branch's); otherwise the checked value is only asked whether it holds a field, since a
 * transform may give back anything.
 */
export function undeclaredFields(given: unknown, checked: unknown, schema: unknown, options: { exact?: boolean } = {}): string[] {
  const found: string[] = [];
  let visits = 0;
  const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
  // Whether the check kept any less of `value` than it was given, at any depth (a secret's fields: never named).
  const lostInside = (value: unknown, kept: unknown): boolean => {
    if (value === null || typeof value !== "object" || ++visits > MAX_VISITS) return false;
    if (kept === null || typeof kept !== "object" || Array.isArray(value) !== Array.isArray(kept)) return true;
    const held = kept as Record<string, unknown>;
    return Object.keys(value).some((key) => !Object.hasOwn(held, key) || lostInside((value as Record<string, unknown>)[key], held[key]));
  };
  const walk = (value: unknown, kept: unknown, node: unknown, at: string) => {
    // Only objects and arrays are counted: a long list of numbers costs nothing to pass over.
    if (found.length >= 20 || value === null || typeof value !== "object" || ++visits > MAX_VISITS) return;
    const branches = schemaBranches(node, schema);
    if (branches.length === 0) return;
    if (branches.some((branch) => isSensitiveSchema(branch as JsonSchema))) {
      // A secret's member names are its own, never named; but one of the few names no object
      // keeps (a secret record's key "constructor") says nothing of it, and is dropped all the same.
      if (isRecord(value) && isRecord(kept)) for (const key of NEVER_KEPT_KEYS) if (Object.hasOwn(value, key) && !Object.hasOwn(kept, key)) found.push(`${at}${key}`);
      // Any other field its check dropped is said as the secret's, unnamed (`auth.…`).
      if (options.exact && found.length === 0 && lostInside(value, kept)) found.push(`${at}${SECRET_FIELD}`);
      return;
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length && found.length < 20; i++) {
        // A tuple's element i has its own schema (prefixItems), the rest the items' (a list's every element).
        const schemas = branches.flatMap((branch) => {
          const { prefixItems, items } = branch as { prefixItems?: unknown; items?: unknown };
          if (Array.isArray(prefixItems) && i < prefixItems.length) return [prefixItems[i]];
          return items !== null && typeof items === "object" ? [items] : [];
        });
        if (schemas.length > 0) walk(value[i], Array.isArray(kept) ? kept[i] : undefined, schemas.length === 1 ? schemas[0] : { anyOf: schemas }, `${at}${i}.`);
      }
      return;
    }
    const objects = branches.flatMap((branch) => {
      const properties = (branch as { properties?: unknown }).properties;
      return properties !== null && typeof properties === "object" ? [properties as Record<string, unknown>] : [];
    });
    const anyField = branches.filter(takesAnyField);
    // A transform made the checked value something else: nothing is known of what an object that takes any field kept.
    if (anyField.length > 0 && !isRecord(kept)) return;
    // What a field no branch declares is checked by: each such branch's rest (a record's values), or anything.
    const rests = anyField.map((branch) => restOf(branch as { additionalProperties?: unknown }));
    // An answer that holds a key nobody sent and no branch declares was reshaped by a transform (a
    // record key's, or one that moved a loose object's extra fields aside), and a key a record's
    // check left out may be one its transform renamed or filtered out: then only the keys no check
    // keeps are known to be lost there. Otherwise a key missing from the answer was dropped.
    const renamed = objects.length === 0 || (isRecord(kept) && Object.keys(kept).some((key) => !Object.hasOwn(value, key) && !objects.some((properties) => Object.hasOwn(properties, key))));
    for (const key of Object.keys(value)) {
      if (found.length >= 20) break;
      const holding = objects.filter((properties) => Object.hasOwn(properties, key)).map((properties) => properties[key]);
      const keptHas = isRecord(kept) && Object.hasOwn(kept, key);
      const declaring = holding.length > 0 ? holding : rests;
      // `exact` (no transform anywhere in the input's schema): the answer is what the check kept of
      // the input, so a field it lacks was dropped, one a union's other branch declares included.
      if (!keptHas && (NEVER_KEPT_KEYS.has(key) || (options.exact && isRecord(kept)) || (holding.length === 0 && !renamed))) {
        found.push(`${at}${key}`);
        continue;
      }
      // A record's key the check renamed or filtered out: its value is not in the answer to compare.
      if (!keptHas && holding.length === 0) continue;
      // Kept, and declared by nothing (a loose object's own extra field): nothing to look into.
      if (declaring.length === 0) continue;
      // A declared field is checked by its own schema (an objectWithRest's too); any other by the rests.
      walk((value as Record<string, unknown>)[key], keptHas ? (kept as Record<string, unknown>)[key] : undefined, declaring.length === 1 ? declaring[0] : { anyOf: declaring }, `${at}${key}.`);
    }
  };
  walk(given, checked, schema, "");
  return found;
}

/**
 * `given` without the fields its schema does not declare, read as {@link undeclaredFields} reads
 * them (a value marked sensitive, an object that takes any field and a value the schema says
 * nothing of are kept whole; a loose object, published like any other, keeps its fields only):
 * the input as the client sent it, once checked, for a schema whose transforms make the checked
 * value something else (docs/security.md).
 */
export function declaredOnly(given: unknown, schema: unknown): unknown {
  const walk = (value: unknown, node: unknown): unknown => {
    if (value === null || typeof value !== "object") return value;
    const branches = schemaBranches(node, schema);
    if (branches.length === 0 || branches.some((branch) => isSensitiveSchema(branch as JsonSchema))) return value;
    if (Array.isArray(value)) {
      const items = branches.flatMap((branch) => ((branch as { items?: unknown }).items === undefined ? [] : [(branch as { items?: unknown }).items]));
      if (items.length === 0) return value;
      const item = items.length === 1 ? items[0] : { anyOf: items };
      return value.map((member) => walk(member, item));
    }
    if (branches.some(takesAnyField)) return value;
    const objects = branches.flatMap((branch) => {
      const properties = (branch as { properties?: unknown }).properties;
      return properties !== null && typeof properties === "object" ? [properties as Record<string, unknown>] : [];
    });
    const kept: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      const holding = objects.filter((properties) => Object.hasOwn(properties, key));
      if (holding.length === 0) continue;
      // A defined property: `__proto__` sent as a field stays a field, as the check reads it.
      Object.defineProperty(kept, key, { value: walk(member, holding.length === 1 ? holding[0]![key] : { anyOf: holding.map((properties) => properties[key]) }), enumerable: true, writable: true, configurable: true });
    }
    return kept;
  };
  return walk(given, schema);
}

/** The last segment of a field a secret's check dropped: its name is the secret's, never shown. */
const SECRET_FIELD = "…";

/**
 * The keys valibot's object checks never copy into what they answer (records, loose objects and
 * rests alike), so that no input can set an object's prototype: sent as a record's key, such a
 * one is dropped without a word.
 */
const NEVER_KEPT_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** What checks the fields a branch that takes any field does not name: a record's value schema, or anything (`{}`). */
function restOf(branch: { additionalProperties?: unknown }): unknown {
  const rest = branch.additionalProperties;
  return rest !== null && typeof rest === "object" ? rest : {};
}

/** A branch that names no properties, or takes more than it names, takes any field. */
function takesAnyField(branch: { type?: unknown; properties?: unknown }): boolean {
  const b = branch as { properties?: unknown; additionalProperties?: unknown; patternProperties?: unknown; type?: unknown };
  return (b.properties === undefined && (b.type === undefined || b.type === "object")) || (b.additionalProperties !== undefined && b.additionalProperties !== false) || b.patternProperties !== undefined;
}

/** ` (did you mean "token"?)` after a field name that is not one of `known`, or "" when none is close. */
export function nearestField(name: string, known: string[]): string {
  const near = didYouMean(name, known);
  return near.length > 0 ? ` (did you mean ${near.map((n) => JSON.stringify(n)).join(" or ")}?)` : "";
}

/** A dropped field (a dotted path) with the one meant, as the input's JSON Schema names the fields beside it. */
export function droppedFieldText(field: string, schema: unknown): string {
  const path = field.split(".");
  const last = path.at(-1)!;
  if (last === SECRET_FIELD) return `${JSON.stringify(path.slice(0, -1).join("."))} (a field inside this secret that its schema does not declare, not named: the secret's names are its own)`;
  if (NEVER_KEPT_KEYS.has(last) && !fieldsNamedAt(schema, path.slice(0, -1)).includes(last)) {
    return `${JSON.stringify(field)} (no object of an input keeps a key named ${[...NEVER_KEPT_KEYS].join(", ")}: rename it)`;
  }
  return `${JSON.stringify(field)}${nearestField(path.at(-1)!, fieldsNamedAt(schema, path.slice(0, -1)))}`;
}

/** The fields a JSON Schema names for the object at `path` (through nullables, unions and `$ref`s), for a "did you mean". */
export function fieldsNamedAt(schema: unknown, path: string[]): string[] {
  const objectsOf = (node: unknown) => schemaBranches(node, schema).flatMap((branch) => (branch.properties !== null && typeof branch.properties === "object" ? [branch.properties as Record<string, unknown>] : []));
  // Through array items too: `items.0.dryRun` names a field of the items' objects.
  const itemsOf = (node: unknown) => schemaBranches(node, schema).flatMap((branch) => ((branch as { items?: unknown }).items === undefined ? [] : [(branch as { items?: unknown }).items]));
  let nodes: unknown[] = [schema];
  for (const segment of path) {
    if (/^\d+$/.test(segment)) nodes = nodes.flatMap(itemsOf);
    else nodes = nodes.flatMap(objectsOf).flatMap((properties) => (Object.hasOwn(properties, segment) ? [properties[segment]] : []));
  }
  return [...new Set(nodes.flatMap(objectsOf).flatMap((properties) => Object.keys(properties)))];
}

/**
 * A JSON Schema node as its alternatives: a union's (anyOf, oneOf) or a nullable's branches, an
 * intersection's parts, what its `$ref` points to in `root` (the document it is part of), or
 * itself. The branches of a node marked sensitive carry its mark (`sensitive(v.union(…))`,
 * `sensitive(v.lazy(…))`): what is inside them is the secret's. A reference already followed on
 * the way here (`followed`) is not followed again, so a cycle of them ends.
 */
export function schemaBranches(schema: unknown, root: unknown = schema, followed: ReadonlySet<unknown> = new Set()): Array<{ type?: unknown; properties?: unknown }> {
  if (schema === null || typeof schema !== "object") return [];
  const node = schema as { anyOf?: unknown; oneOf?: unknown; allOf?: unknown; type?: unknown; properties?: unknown };
  const parts = [node.anyOf, node.oneOf, node.allOf].filter(Array.isArray).flat();
  const target = refTarget(node, root);
  if (target && !followed.has(target)) parts.push(target);
  if (parts.length === 0) return target ? [] : [node];
  const through = target ? new Set([...followed, target]) : followed;
  const branches = parts.flatMap((part) => schemaBranches(part, root, through)).filter((branch) => branch.type !== "null");
  return isSensitiveSchema(node as JsonSchema) ? branches.map((branch) => ({ ...branch, [SENSITIVE_MARK]: true })) : branches;
}

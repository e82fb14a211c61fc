import { didYouMean } from "../capability/did-you-mean.ts";
import type { JsonSchema } from "../capability/registered.ts";
import { isSensitiveSchema } from "./redaction.ts";

/** At most this many values of an input are looked at for undeclared fields: a bound on the main thread's time. */
const MAX_VISITS = 100_000;

/**
 * The fields of an input that its schema does not declare, as dotted paths (`items[0].dryRun`
 * shows as `items.0.dryRun`), at most 20: what the input's check drops without a word. Read from
 * the JSON Schema, through unions (a field of any branch is declared), nullables and array
 * items; an object that takes any field (a record, `unknown`) is not looked into, nor is a value
 * marked sensitive (its member names are part of the secret). A field the check kept all the
 * same (a loose object: its checked value still holds it) is not one. The checked value is only
 * asked that: a transform may give back anything.
 */
export function undeclaredFields(given: unknown, checked: unknown, schema: unknown): string[] {
  const found: string[] = [];
  let visits = 0;
  const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
  const walk = (value: unknown, kept: unknown, node: unknown, at: string) => {
    if (found.length >= 20 || ++visits > MAX_VISITS || value === null || typeof value !== "object") return;
    const branches = schemaBranches(node);
    if (branches.length === 0 || branches.some((branch) => isSensitiveSchema(branch as JsonSchema))) return;
    if (Array.isArray(value)) {
      const items = branches.flatMap((branch) => ((branch as { items?: unknown }).items === undefined ? [] : [(branch as { items?: unknown }).items]));
      if (items.length === 0) return;
      const item = items.length === 1 ? items[0] : { anyOf: items };
      for (let i = 0; i < value.length && found.length < 20; i++) walk(value[i], Array.isArray(kept) ? kept[i] : undefined, item, `${at}${i}.`);
      return;
    }
    // A branch that names no properties, or takes more than it names, takes any field.
    const open = branches.some((branch) => {
      const b = branch as { properties?: unknown; additionalProperties?: unknown; patternProperties?: unknown; type?: unknown };
      return (b.properties === undefined && (b.type === undefined || b.type === "object")) || (b.additionalProperties !== undefined && b.additionalProperties !== false) || b.patternProperties !== undefined;
    });
    if (open) return;
    const objects = branches.flatMap((branch) => {
      const properties = (branch as { properties?: unknown }).properties;
      return properties !== null && typeof properties === "object" ? [properties as Record<string, unknown>] : [];
    });
    for (const key of Object.keys(value)) {
      if (found.length >= 20) break;
      const holding = objects.filter((properties) => Object.hasOwn(properties, key));
      const keptValue = isRecord(kept) && Object.hasOwn(kept, key) ? kept[key] : undefined;
      if (holding.length === 0) {
        if (!(isRecord(kept) && Object.hasOwn(kept, key))) found.push(`${at}${key}`);
        continue;
      }
      const next = holding.length === 1 ? holding[0]![key] : { anyOf: holding.map((properties) => properties[key]) };
      walk((value as Record<string, unknown>)[key], keptValue, next, `${at}${key}.`);
    }
  };
  walk(given, checked, schema, "");
  return found;
}

/** ` (did you mean "token"?)` after a field name that is not one of `known`, or "" when none is close. */
export function nearestField(name: string, known: string[]): string {
  const near = didYouMean(name, known);
  return near.length > 0 ? ` (did you mean ${near.map((n) => JSON.stringify(n)).join(" or ")}?)` : "";
}

/** A dropped field (a dotted path) with the one meant, as the input's JSON Schema names the fields beside it. */
export function droppedFieldText(field: string, schema: unknown): string {
  const path = field.split(".");
  return `${JSON.stringify(field)}${nearestField(path.at(-1)!, fieldsNamedAt(schema, path.slice(0, -1)))}`;
}

/** The fields a JSON Schema names for the object at `path` (through nullables and unions), for a "did you mean". */
export function fieldsNamedAt(schema: unknown, path: string[]): string[] {
  const objectsOf = (node: unknown) => schemaBranches(node).flatMap((branch) => (branch.properties !== null && typeof branch.properties === "object" ? [branch.properties as Record<string, unknown>] : []));
  // Through array items too: `items.0.dryRun` names a field of the items' objects.
  const itemsOf = (node: unknown) => schemaBranches(node).flatMap((branch) => ((branch as { items?: unknown }).items === undefined ? [] : [(branch as { items?: unknown }).items]));
  let nodes: unknown[] = [schema];
  for (const segment of path) {
    if (/^\d+$/.test(segment)) nodes = nodes.flatMap(itemsOf);
    else nodes = nodes.flatMap(objectsOf).flatMap((properties) => (Object.hasOwn(properties, segment) ? [properties[segment]] : []));
  }
  return [...new Set(nodes.flatMap(objectsOf).flatMap((properties) => Object.keys(properties)))];
}

/** A JSON Schema node as its alternatives: a union's (anyOf, oneOf) or a nullable's branches, an intersection's parts, or itself. */
export function schemaBranches(schema: unknown): Array<{ type?: unknown; properties?: unknown }> {
  if (schema === null || typeof schema !== "object") return [];
  const node = schema as { anyOf?: unknown; oneOf?: unknown; allOf?: unknown; type?: unknown; properties?: unknown };
  const parts = [node.anyOf, node.oneOf, node.allOf].filter(Array.isArray).flat();
  if (parts.length > 0) return parts.flatMap(schemaBranches).filter((branch) => branch.type !== "null");
  return [node];
}

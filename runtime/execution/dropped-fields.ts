import { didYouMean } from "../capability/did-you-mean.ts";

/**
 * The fields of what was given that the input's check dropped (an object schema strips what it does
 * not declare), as dotted paths, nested objects included; at most 20.
 */
export function droppedFields(given: unknown, checked: unknown, at = "", found: string[] = []): string[] {
  const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
  if (!isRecord(given) || !isRecord(checked) || (at === "" && "withheld" in checked)) return found;
  for (const key of Object.keys(given)) {
    if (found.length >= 20) break;
    if (!Object.hasOwn(checked, key)) found.push(`${at}${key}`);
    else droppedFields(given[key], checked[key], `${at}${key}.`, found);
  }
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
  let at = objectsOf(schema);
  for (const segment of path) at = at.flatMap((properties) => (Object.hasOwn(properties, segment) ? objectsOf(properties[segment]) : []));
  return [...new Set(at.flatMap((properties) => Object.keys(properties)))];
}

/** A JSON Schema node as its alternatives: a union's (anyOf, oneOf) or a nullable's branches, an intersection's parts, or itself. */
export function schemaBranches(schema: unknown): Array<{ type?: unknown; properties?: unknown }> {
  if (schema === null || typeof schema !== "object") return [];
  const node = schema as { anyOf?: unknown; oneOf?: unknown; allOf?: unknown; type?: unknown; properties?: unknown };
  const parts = [node.anyOf, node.oneOf, node.allOf].filter(Array.isArray).flat();
  if (parts.length > 0) return parts.flatMap(schemaBranches).filter((branch) => branch.type !== "null");
  return [node];
}

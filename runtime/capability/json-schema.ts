import { toJsonSchema, type ConversionConfig } from "@valibot/to-json-schema";
import * as v from "valibot";
import type { AnySchema } from "./declaration.ts";
import type { JsonSchema } from "./registered.ts";
import { secretPipes } from "./_secret-pipes.ts";
import { hasSensitive } from "../execution/redaction.ts";

/** Which side of a capability a schema describes: what clients send, or what they receive. */
export type SchemaSide = "input" | "output";

/**
 * Refinements that JSON Schema cannot express but whose absence only widens the published schema.
 * Valibot still enforces them whenever it parses, so publishing the wider schema is honest.
 */
const WIDENING_ACTIONS = ["check", "check_items", "partial_check", "raw_check"];

/** Sub-schemas visited at most while looking for the field at fault. */
const MAX_WALK = 10_000;

/** A schema with no JSON Schema form: names the side, the field path and the schema or action at fault. */
export class SchemaConversionError extends Error {
  constructor(
    readonly side: SchemaSide,
    /** Dotted path of the field at fault (`items[].when`), `null` for the schema itself. */
    readonly path: string | null,
    /** The valibot schema or action type the converter refused (`date`, `custom`, `transform`). */
    readonly schemaType: string | null,
    readonly detail: string,
  ) {
    const where = path === null ? `the ${side} schema` : path.startsWith("[") ? `${side}${path}` : `${side}.${path}`;
    super(`${where} cannot be published as JSON Schema: ${detail}${hint(schemaType)}`);
    this.name = "SchemaConversionError";
  }
}

/**
 * Actions the converter names with a JSON Schema `format` that means more than valibot checks:
 * `isoDateTime` takes `2024-01-02T03:04` only (no seconds, no offset), which RFC 3339's
 * `date-time` refuses, while a client sending a `date-time` (`2024-01-02T03:04:05Z`) was refused;
 * `isoTime` likewise (`03:04` against RFC 3339's `time`). They are published as valibot's own
 * pattern, which says exactly what is taken.
 */
const PATTERN_NOT_FORMAT = new Set(["iso_date_time", "iso_time"]);

/** The pattern `v.isoDateTime()` is published with (`yyyy-mm-ddThh:mm`): the cockpit offers a date-and-time box for it. */
export const ISO_DATE_TIME_PATTERN = v.isoDateTime().requirement.source;

/** The converter settings for one side: draft 2020-12, and a refusal instead of a silent `{}`. */
function configFor(side: SchemaSide): ConversionConfig {
  return {
    target: "draft-2020-12",
    errorMode: "throw",
    typeMode: side,
    ignoreActions: WIDENING_ACTIONS,
    overrideAction: ({ valibotAction, jsonSchema }) => {
      const requirement = (valibotAction as { requirement?: unknown }).requirement;
      if (!PATTERN_NOT_FORMAT.has(valibotAction.type) || !(requirement instanceof RegExp)) return undefined;
      const { format: _format, ...rest } = jsonSchema as Record<string, unknown>;
      return { ...rest, pattern: requirement.source } as never;
    },
  };
}

/**
 * Converts a capability's input or output schema to JSON Schema, once, at load (docs/handler-api.md).
 * Throws a SchemaConversionError naming the field and schema type when there is no JSON form.
 */
export function toCapabilityJsonSchema(schema: AnySchema, side: SchemaSide): JsonSchema {
  const config = configFor(side);
  // A secret's mark must reach the published schema wherever it sits in a pipe (docs/security.md).
  const marked = secretPipes(schema);
  try {
    return withheldSecretDefaults(toJsonSchema(marked as never, config) as JsonSchema);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    const culprit = locate(marked as SchemaNode, [], config, new Set());
    const schemaType = /The "([a-z_0-9]+)" (?:schema|action)/.exec(culprit?.detail ?? detail)?.[1] ?? null;
    const path = culprit && culprit.path.length > 0 ? culprit.path.join("").replace(/^\./, "") : null;
    throw new SchemaConversionError(side, path, schemaType, culprit?.detail ?? detail);
  }
}

/**
 * The schema with the default of every secret taken out (`v.optional(sensitive(v.string()),
 * "…")`): a published schema is read by every client, the cockpit's form and MCP's tools/list
 * among them, and no page may carry a secret (docs/security.md). `x-docket-default-withheld`
 * says that one applies all the same. Any node holding a secret anywhere below it (an object, a
 * list, a record, a union of them, a `$ref` to one) has its default withheld whole.
 */
function withheldSecretDefaults(schema: JsonSchema): JsonSchema {
  const stack: unknown[] = [schema];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    const record = node as Record<string, unknown>;
    if ("default" in record && hasSensitive(record, schema)) {
      delete record.default;
      record["x-docket-default-withheld"] = true;
    }
    for (const [key, value] of Object.entries(record)) if (key !== "default" && key !== "const" && key !== "enum" && key !== "examples") stack.push(value);
  }
  return schema;
}

/** What the walk needs of a valibot schema; read structurally so no internal type is imported. */
interface SchemaNode {
  type: string;
  kind?: string;
  pipe?: SchemaNode[];
  entries?: Record<string, SchemaNode>;
  item?: SchemaNode;
  items?: SchemaNode[];
  rest?: SchemaNode;
  key?: SchemaNode;
  value?: SchemaNode;
  wrapped?: SchemaNode;
  options?: unknown[];
  getter?: (input: unknown) => SchemaNode;
}

/** The sub-schemas of a node with the path segment that leads to each. */
function children(node: SchemaNode, config: ConversionConfig): Array<[string, SchemaNode]> {
  const out: Array<[string, SchemaNode]> = [];
  if (node.entries) for (const [key, entry] of Object.entries(node.entries)) out.push([`.${key}`, entry]);
  if (node.item) out.push(["[]", node.item]);
  if (Array.isArray(node.items)) node.items.forEach((item, i) => out.push([`[${i}]`, item]));
  if (node.rest) out.push([node.type.includes("tuple") ? "[]" : ".*", node.rest]);
  if (node.type === "record" && node.value) out.push([".*", node.value]);
  if (node.wrapped) out.push(["", node.wrapped]);
  if (Array.isArray(node.options) && ["union", "variant", "intersect"].includes(node.type)) {
    for (const option of node.options) out.push(["", option as SchemaNode]);
  }
  if (node.type === "lazy" && node.getter) out.push(["", node.getter(undefined)]);
  if (node.pipe) {
    // Only the schemas the converter itself looks at: the first for input, the last for output.
    const schemas = node.pipe.filter((item) => item.kind === "schema");
    const looked = config.typeMode === "output" ? schemas.slice(-1) : schemas.slice(0, 1);
    for (const schema of looked) if (schema !== node) out.push(["", schema]);
  }
  return out;
}

/** Finds the deepest sub-schema that still fails to convert on its own; that is the field to name. */
function locate(node: SchemaNode, path: string[], config: ConversionConfig, seen: Set<SchemaNode>): { path: string[]; detail: string } | null {
  // A lazy getter may build a fresh schema on every call: the depth bound ends such a walk.
  if (seen.has(node) || seen.size > MAX_WALK) return null;
  seen.add(node);
  for (const [segment, child] of children(node, config)) {
    const failure = tryConvert(child, config);
    if (failure === null) continue;
    return locate(child, segment ? [...path, segment] : path, config, seen) ?? { path: segment ? [...path, segment] : path, detail: failure };
  }
  const own = tryConvert(node, config);
  return own === null ? null : { path, detail: own };
}

function tryConvert(node: SchemaNode, config: ConversionConfig): string | null {
  try {
    toJsonSchema(node as never, config);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** A way out for the schema types users meet most often. */
function hint(schemaType: string | null): string {
  switch (schemaType) {
    case "date":
      return ' Use v.pipe(v.string(), v.isoDateTime()) and convert in the handler.';
    case "bigint":
      return " Use v.string() or v.number() and convert in the handler.";
    case "undefined":
    case "void":
      return " Use v.optional(...) for a field that may be missing, or v.null().";
    case "custom":
    case "function":
    case "instance":
      return " Describe the value with JSON-compatible schemas (objects, strings, numbers, arrays).";
    case "transform":
      return " End the pipe with a schema for the transformed value (v.pipe(v.string(), v.transform(...), v.number())).";
    default:
      return "";
  }
}

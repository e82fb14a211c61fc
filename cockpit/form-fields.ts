import type { JsonSchema } from "../runtime/capability/registered.ts";
import { hasSensitive, isSensitiveSchema, secretKeys } from "../runtime/execution/redaction.ts";
import { withRefs } from "../runtime/execution/schema-refs.ts";
import { ISO_DATE_TIME_PATTERN } from "../runtime/capability/json-schema.ts";
import { childControl, ROW_INDEX } from "./form-names.ts";

/**
 * How one input property is entered; `json` is the fallback for anything no control expresses.
 * `object` is a fieldset of its own fields, `rows` a repeatable row of fields per array item,
 * `record` key/value rows, `variant` a chooser between object shapes. `datetime` is a wall time
 * taken as typed (`v.isoDateTime()`), `timestamp` a moment (`format: date-time`) that needs a zone.
 */
export type FieldKind = "text" | "password" | "number" | "integer" | "boolean" | "choice" | "choices" | "list" | "date" | "datetime" | "timestamp" | "object" | "rows" | "record" | "variant" | "json";

/** A scalar an enum or a list holds. */
export type Scalar = string | number | boolean | null;

/** One field of a generated form, derived from one property of the input JSON Schema. */
export interface FieldSpec {
  /** The property name. */
  name: string;
  /**
   * The form control's name: `input.<property>`, so no property can clash with the form's own
   * fields; a property name with `.` or `~` is escaped (form-names.ts), so no two controls share one.
   */
  control: string;
  kind: FieldKind;
  required: boolean;
  description: string | null;
  hasDefault: boolean;
  /** A secret's default, left out of the published schema (it applies all the same). */
  defaultWithheld: boolean;
  default: unknown;
  /** `choice` / `choices`: the allowed values. */
  options: Scalar[];
  /** `list`: how each line is read. */
  item: "string" | "number" | "integer";
  minimum: number | null;
  maximum: number | null;
  minLength: number | null;
  maxLength: number | null;
  pattern: string | null;
  /** The schema allows null besides the value's type. */
  nullable: boolean;
  /** The value itself is a secret (format password, writeOnly, x-docket-sensitive): typed into a password box. */
  secret: boolean;
  /** The value is or holds a secret: never written back into a re-rendered form. */
  sensitive: boolean;
  /** `object`: its fields; `rows`: the fields of one row (controls hold {@link ROW_INDEX}); `record`: `key` and `value`. */
  fields: FieldSpec[];
  /** `variant`: each shape the value may take, with the constant that tells them apart, if any. */
  variants: VariantSpec[];
}

/** One shape of a `variant` field: its label, its fields, and the discriminating constant it sets. */
export interface VariantSpec {
  label: string;
  fields: FieldSpec[];
  /** A property every shape has as a constant (`kind: "a"`): set by choosing, not typed. */
  constant: { name: string; value: Scalar } | null;
}

export { ROW_INDEX };

/** How deep fieldsets nest before a value falls back to a JSON box. */
const MAX_DEPTH = 3;

/** The controls of an input form, or null when the input is not an object of named properties (raw JSON only). */
export type FormShape = FieldSpec[] | null;

const isObject = (value: unknown): value is JsonSchema => typeof value === "object" && value !== null && !Array.isArray(value);
const isScalar = (value: unknown): value is Scalar => value === null || ["string", "number", "boolean"].includes(typeof value);

/**
 * A schema as a form reads it: its `$ref` (a recursive schema's `$defs`, `v.lazy`) followed into
 * the input schema `root`, so that a secret there is typed blind like any other (docs/cockpit.md).
 */
const resolved = (schema: JsonSchema, root: JsonSchema): JsonSchema => withRefs(schema, root);

/** `anyOf: [X, {type: "null"}]` or `type: [t, "null"]` → X and "nullable"; anything else unchanged. */
function unwrapNullable(schema: JsonSchema, root: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const branches = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  if (branches && branches.length === 2) {
    const rest = branches.filter((b) => !(isObject(b) && resolved(b, root).type === "null"));
    if (rest.length === 1 && isObject(rest[0])) {
      const { anyOf: _a, oneOf: _o, ...outer } = schema;
      const inner = resolved(rest[0], root);
      return { schema: { ...outer, ...inner, description: schema.description ?? inner.description }, nullable: true };
    }
  }
  if (Array.isArray(schema.type) && schema.type.length === 2 && schema.type.includes("null")) {
    return { schema: { ...schema, type: schema.type.find((t) => t !== "null") }, nullable: true };
  }
  return { schema, nullable: false };
}

/** The values of an enum: `enum`, a `const`, or `anyOf`/`oneOf` whose every branch is a `const`. Null when not an enum. */
function enumValues(schema: JsonSchema): Scalar[] | null {
  if (Array.isArray(schema.enum) && schema.enum.every(isScalar)) return schema.enum as Scalar[];
  if ("const" in schema && isScalar(schema.const)) return [schema.const];
  const branches = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  if (branches && branches.length > 0 && branches.every((b) => isObject(b) && "const" in b && isScalar(b.const))) {
    return branches.map((b) => (b as JsonSchema).const as Scalar);
  }
  return null;
}

const num = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);

/** `{type: "object", properties}` and nothing that a form could not express next to it. */
const isPlainObjectSchema = (s: JsonSchema) => s.type === "object" && isObject(s.properties) && !isObject(s.additionalProperties);

/** The object branches of an anyOf/oneOf of two or more object shapes, or null. */
function objectBranches(schema: JsonSchema, root: JsonSchema): JsonSchema[] | null {
  const listed = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  const branches = listed?.map((b) => (isObject(b) ? resolved(b, root) : b));
  if (!branches || branches.length < 2 || !branches.every((b) => isObject(b) && isPlainObjectSchema(b))) return null;
  return branches as JsonSchema[];
}

/** The property every branch holds as a distinct constant (a discriminated union's tag), if any. */
function discriminator(branches: JsonSchema[]): string | null {
  const first = branches[0]!.properties as Record<string, JsonSchema>;
  for (const name of Object.keys(first)) {
    const values = branches.map((b) => ((b.properties as Record<string, unknown>)[name] as JsonSchema | undefined)?.const);
    if (values.every(isScalar) && new Set(values.map((v) => JSON.stringify(v))).size === branches.length) return name;
  }
  return null;
}

/** Which control enters a value of this schema. */
function kindOf(schema: JsonSchema, control: string, depth: number, root: JsonSchema): Pick<FieldSpec, "kind" | "options" | "item" | "fields" | "variants"> {
  const none = { options: [], item: "string" as const, fields: [], variants: [] };
  const options = enumValues(schema);
  if (options) return { ...none, kind: "choice", options };
  const nested = depth < MAX_DEPTH && !isSensitiveSchema(schema);
  if (nested && isPlainObjectSchema(schema)) return { ...none, kind: "object", fields: fieldsOf(schema, control, depth + 1, root) };
  const branches = nested ? objectBranches(schema, root) : null;
  if (branches) {
    const tag = discriminator(branches);
    return {
      ...none,
      kind: "variant",
      variants: branches.map((branch, k) => {
        const constant = tag === null ? null : { name: tag, value: (branch.properties as Record<string, JsonSchema>)[tag]!.const as Scalar };
        const fields = fieldsOf(branch, `${control}.v${k}`, depth + 1, root).filter((f) => f.name !== tag);
        const label = typeof branch.title === "string" ? branch.title : constant ? String(constant.value) : `Shape ${k + 1}`;
        return { label, fields, constant };
      }),
    };
  }
  switch (schema.type) {
    case "string":
      // A secret is typed blind whatever its format: a date-and-time box would show it, and its
      // parse quote it back.
      if (isSensitiveSchema(schema)) return { ...none, kind: "password" };
      if (schema.format === "date") return { ...none, kind: "date" };
      if (schema.format === "date-time") return { ...none, kind: "timestamp" };
      if (schema.pattern === ISO_DATE_TIME_PATTERN) return { ...none, kind: "datetime" };
      return { ...none, kind: "text" };
    case "integer":
      return { ...none, kind: "integer" };
    case "number":
      return { ...none, kind: "number" };
    case "boolean":
      return { ...none, kind: "boolean" };
    case "array": {
      const items = isObject(schema.items) ? unwrapNullable(resolved(schema.items, root), root).schema : null;
      if (!items || hasSensitive(items, root)) break;
      const itemOptions = enumValues(items);
      if (itemOptions) return { ...none, kind: "choices", options: itemOptions };
      if (items.type === "string" || items.type === "number" || items.type === "integer") return { ...none, kind: "list", item: items.type };
      if (nested && isPlainObjectSchema(items)) return { ...none, kind: "rows", fields: fieldsOf(items, `${control}.${ROW_INDEX}`, depth + 1, root) };
      break;
    }
    case "object": {
      const value = isObject(schema.additionalProperties) ? unwrapNullable(resolved(schema.additionalProperties, root), root).schema : null;
      if (!nested || isObject(schema.properties) || !value || hasSensitive(value, root)) break;
      if (["string", "number", "integer", "boolean"].includes(value.type as string) || enumValues(value)) {
        const row = `${control}.${ROW_INDEX}`;
        return {
          ...none,
          kind: "record",
          // Keys the schema marks secret (`v.record(sensitive(v.string()), …)`) are typed blind.
          fields: [fieldOf("key", `${row}.key`, { type: "string", description: "The key.", ...(secretKeys(schema, root) ? { "x-docket-sensitive": true } : {}) }, true, depth + 1, root), fieldOf("value", `${row}.value`, value, true, depth + 1, root)],
        };
      }
      break;
    }
  }
  return { ...none, kind: "json" };
}

/** One field for one property: its control, its kind, and what the schema says about it. */
function fieldOf(name: string, control: string, raw: unknown, required: boolean, depth: number, root: JsonSchema): FieldSpec {
  const original = isObject(raw) ? resolved(raw, root) : {};
  const { schema: s, nullable } = unwrapNullable(original, root);
  const secret = isSensitiveSchema(original) || isSensitiveSchema(s);
  // A checkbox has two states and null is a third: a boolean that may be null is a select of
  // true and false, whose empty choice is null (docs/cockpit.md).
  const shape = nullable && s.type === "boolean" && !enumValues(s) ? { ...kindOf(s, control, depth, root), kind: "choice" as const, options: [true, false] } : kindOf(s, control, depth, root);
  // A list of secrets is typed as JSON into a password box (a textarea of lines would show them).
  const kind = secret && shape.kind === "text" ? "password" : shape.kind === "list" && hasSensitive(original, root) ? "json" : shape.kind;
  // A container's secrets are its own fields' business; the container itself is no secret.
  const container = kind === "object" || kind === "rows" || kind === "record" || kind === "variant";
  return {
    name,
    control,
    kind,
    required,
    description: typeof s.description === "string" ? s.description : typeof s.title === "string" ? s.title : null,
    hasDefault: "default" in s,
    defaultWithheld: s["x-docket-default-withheld"] === true || original["x-docket-default-withheld"] === true,
    default: s.default,
    options: shape.options,
    item: shape.item,
    minimum: num(s.minimum) ?? num(s.exclusiveMinimum),
    maximum: num(s.maximum) ?? num(s.exclusiveMaximum),
    minLength: num(s.minLength),
    maxLength: num(s.maxLength),
    pattern: typeof s.pattern === "string" ? s.pattern : null,
    nullable,
    secret,
    sensitive: container ? false : secret || hasSensitive(original, root),
    fields: shape.fields,
    variants: shape.variants,
  };
}

/** The fields of an object schema's properties, in declaration order, under `prefix`. */
function fieldsOf(schema: JsonSchema, prefix: string, depth: number, root: JsonSchema): FieldSpec[] {
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  return Object.entries(schema.properties as Record<string, unknown>).map(([name, raw]) => fieldOf(name, childControl(prefix, name), raw, required.has(name), depth, root));
}

/**
 * The form for an input JSON Schema: one field per property of an object schema, in declaration
 * order. Strings, numbers and integers (with their bounds), booleans, enums, dates, arrays of
 * scalars and secrets get their own controls; nested objects are fieldsets, arrays of objects
 * repeatable rows, records key/value rows, unions of object shapes a chooser — three levels deep,
 * then a JSON box; a `$ref` (a recursive schema) is read as what it points to. Null when the
 * schema is not an object with properties: raw JSON alone.
 */
export function formShape(schema: JsonSchema): FormShape {
  const root = resolved(schema, schema);
  if (root.type !== "object" || !isObject(root.properties)) return null;
  return fieldsOf(root, "input", 0, schema);
}

/** A row's fields with its index in their controls (`input.items.__row__.name` → `input.items.2.name`), nested rows included. */
export function rowFields(fields: FieldSpec[], index: number, rowControl: string): FieldSpec[] {
  const from = `${rowControl}.${ROW_INDEX}`;
  const to = `${rowControl}.${index}`;
  const rename = (field: FieldSpec): FieldSpec => ({
    ...field,
    control: field.control.startsWith(from) ? to + field.control.slice(from.length) : field.control,
    fields: field.fields.map(rename),
    variants: field.variants.map((v) => ({ ...v, fields: v.fields.map(rename) })),
  });
  return fields.map(rename);
}

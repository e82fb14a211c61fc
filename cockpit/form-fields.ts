import type { JsonSchema } from "../runtime/capability/registered.ts";
import { hasSensitive, isSensitiveSchema } from "../runtime/execution/redaction.ts";

/** How one input property is entered; `json` is the fallback for anything a plain control cannot express. */
export type FieldKind = "text" | "password" | "number" | "integer" | "boolean" | "choice" | "choices" | "list" | "json";

/** A scalar an enum or a list holds. */
export type Scalar = string | number | boolean | null;

/** One field of a generated form, derived from one property of the input JSON Schema. */
export interface FieldSpec {
  /** The property name. */
  name: string;
  /** The form control's name: `input.<property>`, so no property can clash with the form's own fields. */
  control: string;
  kind: FieldKind;
  required: boolean;
  description: string | null;
  hasDefault: boolean;
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
}

/** The controls of an input form, or null when the input is not an object of named properties (raw JSON only). */
export type FormShape = FieldSpec[] | null;

const isObject = (value: unknown): value is JsonSchema => typeof value === "object" && value !== null && !Array.isArray(value);
const isScalar = (value: unknown): value is Scalar => value === null || ["string", "number", "boolean"].includes(typeof value);

/** `anyOf: [X, {type: "null"}]` or `type: [t, "null"]` → X and "nullable"; anything else unchanged. */
function unwrapNullable(schema: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const branches = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  if (branches && branches.length === 2) {
    const rest = branches.filter((b) => !(isObject(b) && b.type === "null"));
    if (rest.length === 1 && isObject(rest[0])) {
      const { anyOf: _a, oneOf: _o, ...outer } = schema;
      return { schema: { ...outer, ...rest[0], description: schema.description ?? rest[0].description }, nullable: true };
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

/** Which control enters a value of this schema. */
function kindOf(schema: JsonSchema): Pick<FieldSpec, "kind" | "options" | "item"> {
  const options = enumValues(schema);
  if (options) return { kind: "choice", options, item: "string" };
  switch (schema.type) {
    case "string":
      return { kind: isSensitiveSchema(schema) ? "password" : "text", options: [], item: "string" };
    case "integer":
      return { kind: "integer", options: [], item: "string" };
    case "number":
      return { kind: "number", options: [], item: "string" };
    case "boolean":
      return { kind: "boolean", options: [], item: "string" };
    case "array": {
      const items = isObject(schema.items) ? unwrapNullable(schema.items).schema : null;
      if (!items || hasSensitive(items)) break;
      const itemOptions = enumValues(items);
      if (itemOptions) return { kind: "choices", options: itemOptions, item: "string" };
      if (items.type === "string" || items.type === "number" || items.type === "integer") return { kind: "list", options: [], item: items.type };
      break;
    }
  }
  return { kind: "json", options: [], item: "string" };
}

/**
 * The form for an input JSON Schema: one field per property of an object schema, in declaration
 * order. Strings, numbers and integers (with their bounds), booleans, enums, arrays of scalars
 * and secrets get their own controls; any other property is a JSON text field. Null when the
 * schema is not an object with properties: the form is then raw JSON alone.
 */
export function formShape(schema: JsonSchema): FormShape {
  if (schema.type !== "object" || !isObject(schema.properties)) return null;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  return Object.entries(schema.properties).map(([name, raw]): FieldSpec => {
    const original = isObject(raw) ? raw : {};
    const { schema: s, nullable } = unwrapNullable(original);
    const secret = isSensitiveSchema(original) || isSensitiveSchema(s);
    const shape = kindOf(s);
    const kind = secret && shape.kind === "text" ? "password" : shape.kind;
    return {
      name,
      control: `input.${name}`,
      kind,
      required: required.has(name),
      description: typeof s.description === "string" ? s.description : typeof s.title === "string" ? s.title : null,
      hasDefault: "default" in s,
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
      sensitive: secret || hasSensitive(original),
    };
  });
}

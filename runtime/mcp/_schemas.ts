import type { JsonSchema } from "../capability/registered.ts";
import { protocolSchemas } from "../execution/protocol.ts";

/** MCP's tool schemas must be objects at the root; a capability's may be anything. */
type ObjectSchema = JsonSchema & { type: "object" };

/** The JSON Schema of a failure descriptor (docs/protocol.md), taken from the event protocol that defines it once. */
export function failureJsonSchema(): JsonSchema {
  const completed = protocolSchemas().payload_schemas["execution.completed"] as { properties: { failure: JsonSchema } };
  return completed.properties.failure;
}

/** True when a schema describes a JSON object at its root. */
export function isObjectSchema(schema: JsonSchema): schema is ObjectSchema {
  return schema.type === "object";
}

/**
 * A tool's `inputSchema`: the capability's own when it takes an object; otherwise the value is
 * asked for as `{ input: … }` (MCP arguments are always an object) and unwrapped on the way in.
 */
export function toolInputSchema(schema: JsonSchema): ObjectSchema {
  if (isObjectSchema(schema)) return schema;
  const { $schema, $defs, ...body } = schema;
  // An input with a default may be left out, as the capability itself takes it.
  return { ...($schema ? { $schema } : {}), ...($defs ? { $defs } : {}), type: "object", properties: { input: body }, ...("default" in body ? {} : { required: ["input"] }) } as ObjectSchema;
}

/**
 * A tool's `outputSchema`: the capability's output OR a failure descriptor. A failure travels as
 * structured content with `isError: true` (README.md), and MCP SDK 1.x clients validate an error's
 * structured content against the output schema too (typescript-sdk issue 2748), so the schema has
 * to admit both. `$defs` stay at the root, where the output's `#/$defs/…` references point.
 * Undefined when the output is not an object: MCP structured content must be one.
 */
export function toolOutputSchema(schema: JsonSchema, failure: JsonSchema): ObjectSchema | undefined {
  if (!isObjectSchema(schema)) return undefined;
  const { $schema, $defs, ...body } = schema;
  return { ...($schema ? { $schema } : {}), ...($defs ? { $defs } : {}), type: "object", anyOf: [body, failure] } as ObjectSchema;
}

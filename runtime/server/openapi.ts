import type { ExecutionPlane } from "../execution/plane.ts";
import { callsDirectly, type JsonSchema, type RegisteredCapability } from "../capability/registered.ts";
import { protocolSchemas } from "../execution/protocol.ts";
import { DOCKET_VERSION } from "../version.ts";
import { EXECUTION_ID_PATTERN } from "../execution/execution-id.ts";
import { API_PREFIX, capabilityPath, methodsOf } from "./api-routes.ts";
import { holdsSecret } from "./query-input.ts";
import { queryStyleOf } from "./query-style.ts";

type Doc = Record<string, unknown>;

/**
 * A JSON Schema made fit for an OpenAPI 3.1 document: `$schema` dropped (the dialect is the
 * document's) and local `$defs` hoisted into components, since `#/...` refs resolve against the
 * document root there.
 */
function embed(schema: JsonSchema, prefix: string, components: Record<string, unknown>): JsonSchema {
  const defs = (schema.$defs ?? {}) as Record<string, JsonSchema>;
  const rename = (name: string) => `${prefix}.${name}`;
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (!value || typeof value !== "object") return value;
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (key === "$schema" || key === "$defs") continue;
      out[key] = key === "$ref" && typeof v === "string" && v.startsWith("#/$defs/") ? `#/components/schemas/${rename(v.slice(8))}` : rewrite(v);
    }
    return out;
  };
  for (const [name, def] of Object.entries(defs)) components[rename(name)] = rewrite(def);
  return rewrite(schema) as JsonSchema;
}

/** The `{ error: FailureDescriptor }` schema, derived from the protocol's valibot failure schema. */
function errorSchema(): JsonSchema {
  const completed = protocolSchemas().payload_schemas["execution.completed"] as { properties: { failure: JsonSchema } };
  const failure = { ...completed.properties.failure };
  delete failure.$schema;
  return { type: "object", properties: { error: failure }, required: ["error"] };
}

const errorResponses = {
  "400": { $ref: "#/components/responses/Error" },
  "404": { $ref: "#/components/responses/Error" },
  default: { $ref: "#/components/responses/Error" },
};

/** The input fields a GET cannot take (query-input.ts holdsSecret): they hold a secret, and URLs end up in logs. */
function secretFields(capability: RegisteredCapability): string[] {
  const properties = (capability.input_schema.properties ?? {}) as Record<string, JsonSchema>;
  return Object.keys(properties).filter((name) => holdsSecret(capability.input_schema, name));
}

/** True when a GET can call the capability at all: none of its required fields holds a secret. */
function callableByGet(capability: RegisteredCapability): boolean {
  const required = (capability.input_schema.required ?? []) as string[];
  return !required.some((name) => holdsSecret(capability.input_schema, name));
}

/**
 * An array field's schema as a form-exploded query parameter. OpenAPI tools require an array
 * parameter to have an `items` schema, which a tuple lacks (`prefixItems` alone) or sets to `false`
 * (a strict one): what `v.tuple` drops after its places is `{}`, and a strict tuple's `false`
 * becomes `{}` within `maxItems`, which takes the same arrays.
 */
function parameterSchema(schema: JsonSchema): JsonSchema {
  if (schema.type !== "array" || (schema.items && typeof schema.items === "object")) return schema;
  if (schema.items !== false) return { ...schema, items: {} };
  const places = Array.isArray(schema.prefixItems) ? schema.prefixItems.length : 0;
  return { ...schema, items: {}, maxItems: typeof schema.maxItems === "number" ? Math.min(schema.maxItems, places) : places };
}

function operation(capability: RegisteredCapability, method: "GET" | "POST", input: JsonSchema, output: JsonSchema): Doc {
  const op: Doc = {
    operationId: `${capability.id}${method === "GET" ? "" : ".post"}`,
    summary: capability.title,
    description: `${capability.description}\n\neffect: ${capability.effect}${capability.cancellable ? ", cancellable" : ""}`,
    tags: [capability.id.split(".")[0]],
    responses: { "200": { description: "The capability's output.", content: { "application/json": { schema: output } } }, ...errorResponses },
  };
  if (method === "POST") {
    op.requestBody = { required: false, content: { "application/json": { schema: input } } };
    return op;
  }
  const properties = (input.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((input.required ?? []) as string[]);
  const secret = secretFields(capability);
  if (secret.length > 0) op.description += `\n\nTaken in a POST body only, never from the query string: ${secret.join(", ")} (sensitive).`;
  const declared = (capability.input_schema.properties ?? {}) as Record<string, JsonSchema>;
  op.parameters = Object.entries(properties).filter(([name]) => !secret.includes(name)).map(([name, schema]) => {
    // What can hold an object or an array, other than an array itself (an object, a variant, a
    // union or an intersection holding one), travels as one JSON text; OpenAPI says so with
    // `content` instead of `schema`. An array is one element per occurrence of its key, anything
    // else its text (query-style.ts, the rule the reader follows). The style is decided on the
    // capability's own schema, whose `$defs` its refs (a v.lazy) point into.
    return queryStyleOf(declared[name], capability.input_schema) === "json"
      ? { name, in: "query", required: required.has(name), content: { "application/json": { schema } } }
      : { name, in: "query", required: required.has(name), schema: parameterSchema(schema), style: "form", explode: true };
  });
  return op;
}

/** OpenAPI 3.1 for every route, generated from the registry (`GET /api/v1/openapi.json`). */
export function openApiDocument(plane: ExecutionPlane, options: { token: boolean; origin: string }): Doc {
  const schemas: Record<string, unknown> = { Error: errorSchema() };
  const paths: Record<string, Doc> = {};
  for (const capability of [...plane.capabilities()].sort((a, b) => a.id.localeCompare(b.id))) {
    // An execution-only capability has no route of its own: executions.start runs it.
    if (!callsDirectly(capability)) continue;
    const input = embed(capability.input_schema, capability.id, schemas);
    const output = embed(capability.output_schema, capability.id, schemas);
    const item: Doc = {};
    // A GET that could never carry a required field (it holds a secret) is not offered.
    for (const method of methodsOf(capability)) if (method === "POST" || callableByGet(capability)) item[method.toLowerCase()] = operation(capability, method, input, output);
    paths[capabilityPath(capability.id)] = item;
    if (capability.id === "executions.list") paths[`${API_PREFIX}/executions`] = { get: { ...(item.get as Doc), operationId: "executions.list.alias" } };
  }
  paths[`${API_PREFIX}/executions/artifact`] = {
    get: {
      operationId: "executions.artifact",
      summary: "Download one artifact file of an execution",
      parameters: [
        { name: "id", in: "query", required: true, schema: { type: "string", pattern: EXECUTION_ID_PATTERN.source } },
        { name: "name", in: "query", required: true, schema: { type: "string" } },
      ],
      responses: { "200": { description: "The file.", content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } } }, ...errorResponses },
    },
  };
  paths[`${API_PREFIX}/openapi.json`] = { get: { operationId: "openapi", summary: "This document", responses: { "200": { description: "OpenAPI 3.1", content: { "application/json": { schema: { type: "object" } } } } } } };
  paths[`${API_PREFIX}/plane`] = {
    get: {
      operationId: "plane",
      summary: "Which checkout this server serves (what `docket run` asks before reporting)",
      responses: { "200": { description: "The plane", content: { "application/json": { schema: { type: "object", properties: { root: { type: "string" }, pid: { type: "integer" }, version: { type: "string" } }, required: ["root", "pid", "version"] } } } } },
    },
  };
  paths["/healthz"] = {
    get: { operationId: "healthz", summary: "Liveness", security: [], responses: {
        "200": { description: "Alive, and the store writes", content: { "application/json": { schema: { type: "object", properties: { ok: { const: true } } } } } },
        "503": {
          description: "Alive, but the execution store cannot write (new executions are refused until it can)",
          content: { "application/json": { schema: { type: "object", properties: { ok: { const: false }, store: { type: "object", properties: { ok: { const: false }, reason: { type: "string" }, since: { type: "string" } } } } } } },
        },
      } },
  };
  paths["/events"] = {
    get: {
      operationId: "events",
      summary: "The live channel: a WebSocket (RFC 6455); one JSON document per text frame. See executions.protocol.",
      parameters: [
        { name: "execution", in: "query", required: false, schema: { type: "array", items: { type: "string" } }, style: "form", explode: true },
        { name: "after", in: "query", required: false, schema: { type: "integer", minimum: 0 } },
      ],
      responses: { "101": { description: "Switching protocols" }, "426": { $ref: "#/components/responses/Error" }, default: { $ref: "#/components/responses/Error" } },
    },
  };
  const components: Doc = {
    schemas,
    responses: { Error: { description: "A failure descriptor (docs/protocol.md).", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } } },
  };
  const doc: Doc = {
    openapi: "3.1.0",
    info: { title: "docket", version: DOCKET_VERSION, description: "Every capability is one file; this API is generated from the registry." },
    servers: [{ url: options.origin }],
    paths,
    components,
  };
  if (options.token) {
    components.securitySchemes = { bearer: { type: "http", scheme: "bearer" } };
    doc.security = [{ bearer: [] }];
  }
  return doc;
}

import * as v from "valibot";
import { toJsonSchema } from "@valibot/to-json-schema";
import { EXECUTION_STATES } from "./state-machine.ts";
import { EXECUTION_ID_PATTERN } from "./execution-id.ts";

/** Moves only for a change a version-1 client could not safely ignore (docs/protocol.md). */
export const SCHEMA_VERSION = "1";

const Actor = v.variant("kind", [
  v.object({ kind: v.literal("http") }),
  v.object({ kind: v.literal("cockpit") }),
  v.object({ kind: v.literal("mcp"), client: v.optional(v.string()) }),
  v.object({ kind: v.literal("cli"), pid: v.number() }),
]);
export type Actor = v.InferOutput<typeof Actor>;

/** Why an execution is cancelling when nobody asked (docs/protocol.md, "Cancellation and deadlines"). */
export const CANCEL_REASONS = ["deadline_ms", "timeout_ms", "handler"] as const;
export type CancelReason = (typeof CANCEL_REASONS)[number];

const FailureSchema = v.object({
  error_code: v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_]*$/)),
  stage: v.picklist(["validate", "admit", "queue", "run", "report", "complete"]),
  message: v.string(),
  retryability: v.picklist(["never", "safe", "after_delay", "manual_reconcile", "requires_confirmation"]),
  outcome_certainty: v.picklist(["not_applied", "applied", "unknown"]),
  correlation_id: v.string(),
  request_id: v.string(),
  trace_id: v.string(),
  suggestion: v.string(),
  context: v.record(v.string(), v.unknown()),
});

/** Payload schemas, one per event type: the single definition the JSON Schema is derived from. */
export const EVENT_PAYLOADS = {
  "execution.created": v.object({
    capability: v.string(),
    input: v.unknown(),
    actor: Actor,
    run_id: v.nullable(v.string()),
    session_key: v.nullable(v.string()),
    // Optional: events written before versions were recorded, and older `docket run`s, lack it.
    capability_version: v.optional(v.nullable(v.string())),
  }),
  "execution.started": v.object({}),
  "execution.step": v.object({ id: v.string(), title: v.string(), truncated: v.optional(v.boolean()) }),
  "execution.step_done": v.object({ id: v.string(), ok: v.boolean(), message: v.optional(v.string()), truncated: v.optional(v.boolean()) }),
  "execution.progress": v.object({ current: v.number(), total: v.optional(v.nullable(v.number())), message: v.optional(v.string()), truncated: v.optional(v.boolean()) }),
  "execution.log": v.object({ level: v.picklist(["debug", "info", "warn", "error"]), message: v.string(), truncated: v.optional(v.boolean()) }),
  "execution.stream": v.object({ name: v.string(), chunk: v.string(), truncated: v.optional(v.boolean()) }),
  "execution.diagnostic": v.object({
    severity: v.picklist(["error", "warning", "info"]),
    message: v.string(),
    code: v.optional(v.string()),
    file: v.optional(v.string()),
    line: v.optional(v.number()),
    column: v.optional(v.number()),
    truncated: v.optional(v.boolean()),
  }),
  // Without a reason, `actor` asked. With one, nobody did: the start's deadline_ms or the
  // declaration's timeout_ms passed, or the handler stopped itself; `actor` is then the starter's.
  "execution.cancel_requested": v.object({ actor: Actor, reason: v.optional(v.picklist(CANCEL_REASONS)) }),
  "execution.completed": v.object({
    state: v.picklist(["succeeded", "failed", "cancelled"]),
    output: v.optional(v.unknown()),
    failure: v.optional(FailureSchema),
    duration_ms: v.number(),
  }),
  // The one event that may follow `execution.completed`, once: what settled an unknown outcome
  // (docs/reconciliation.md). The terminal state does not move.
  "execution.reconciled": v.object({
    outcome: v.picklist(["applied", "not_applied"]),
    method: v.picklist(["manual", "check", "run"]),
    actor: Actor,
    note: v.optional(v.string()),
    evidence: v.optional(v.unknown()),
  }),
} as const;

export type EventType = keyof typeof EVENT_PAYLOADS;
export type EventPayload<T extends EventType> = v.InferOutput<(typeof EVENT_PAYLOADS)[T]>;
export const EVENT_TYPES = Object.keys(EVENT_PAYLOADS) as EventType[];

/** The types a handler may emit from its worker; the rest belong to the engine. */
export const HANDLER_EVENT_TYPES = ["execution.step", "execution.step_done", "execution.progress", "execution.log", "execution.stream", "execution.diagnostic"] as const;
export type HandlerEventType = (typeof HANDLER_EVENT_TYPES)[number];

/** One event as a handler or the engine emits it, before the store numbers it. */
export type EventDraft = { [T in EventType]: { type: T; data: EventPayload<T> } }[EventType];

/** An event's id: its execution's id, `#`, its sequence. */
const EVENT_ID_PATTERN = new RegExp(`${EXECUTION_ID_PATTERN.source.slice(0, -1)}#\\d+$`);

const envelopeOf = <T extends EventType>(type: T) =>
  v.object({
    schema_version: v.literal(SCHEMA_VERSION),
    event_id: v.pipe(v.string(), v.regex(EVENT_ID_PATTERN)),
    execution_id: v.pipe(v.string(), v.regex(EXECUTION_ID_PATTERN)),
    sequence: v.pipe(v.number(), v.integer(), v.minValue(1)),
    timestamp: v.pipe(v.string(), v.isoTimestamp()),
    type: v.literal(type),
    data: EVENT_PAYLOADS[type],
  });

/** The envelope with its closed set of payloads, discriminated by `type`. */
export const ExecutionEventSchema = v.variant(
  "type",
  EVENT_TYPES.map((t) => envelopeOf(t)) as unknown as [ReturnType<typeof envelopeOf>, ...ReturnType<typeof envelopeOf>[]],
);

/** A numbered, stamped event as every reader sees it. */
export type ExecutionEvent<T extends EventType = EventType> = {
  schema_version: typeof SCHEMA_VERSION;
  event_id: string;
  execution_id: string;
  sequence: number;
  timestamp: string;
  type: T;
  data: EventPayload<T>;
}

/** The four control messages of the live channel (docs/protocol.md). */
export const CONTROL_MESSAGES = {
  "stream.ready": v.object({
    type: v.literal("stream.ready"),
    schema_version: v.literal(SCHEMA_VERSION),
    subscribed: v.union([v.literal("all"), v.array(v.string())]),
    replayed: v.number(),
    truncated: v.boolean(),
    /** How many events of the history asked for were already dropped (0 unless truncated). */
    dropped: v.number(),
    heartbeat_ms: v.number(),
  }),
  "stream.heartbeat": v.object({ type: v.literal("stream.heartbeat"), timestamp: v.pipe(v.string(), v.isoTimestamp()) }),
  "stream.lagged": v.object({
    type: v.literal("stream.lagged"),
    dropped: v.number(),
    last_sequence: v.optional(v.record(v.string(), v.number())),
    message: v.string(),
  }),
  "stream.closing": v.object({ type: v.literal("stream.closing"), reason: v.string() }),
} as const;

export const ControlMessageSchema = v.variant("type", Object.values(CONTROL_MESSAGES) as any);

const jsonSchemaOf = (schema: v.GenericSchema) => toJsonSchema(schema, { errorMode: "throw", target: "draft-2020-12" }) as Record<string, unknown>;

/** The JSON Schemas of the protocol, derived once from the valibot definitions above. */
export function protocolSchemas() {
  return {
    event_schema: jsonSchemaOf(ExecutionEventSchema),
    control_schema: jsonSchemaOf(ControlMessageSchema),
    payload_schemas: Object.fromEntries(EVENT_TYPES.map((t) => [t, jsonSchemaOf(EVENT_PAYLOADS[t])])),
    states: [...EXECUTION_STATES],
  };
}

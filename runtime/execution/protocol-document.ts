import type { Limits } from "./limits.ts";
import { EXECUTION_STATES, mayMoveTo } from "./state-machine.ts";
import { PLANE_ERROR_CODES } from "./failure.ts";
import { SCHEMA_VERSION, protocolSchemas } from "./protocol.ts";

/** What `executions.protocol` serves: the whole event contract, derived, with the limits in force. */
export function protocolDocument(limits: Limits) {
  const schemas = protocolSchemas();
  return {
    schema_version: SCHEMA_VERSION,
    event_schema: schemas.event_schema,
    control_schema: schemas.control_schema,
    payload_schemas: schemas.payload_schemas,
    states: EXECUTION_STATES,
    transitions: Object.fromEntries(EXECUTION_STATES.map((from) => [from, EXECUTION_STATES.filter((to) => mayMoveTo(from, to))])),
    error_codes: PLANE_ERROR_CODES,
    live_channel: {
      path: "/events",
      forms: ["/events", "/events?execution=<id>", "/events?execution=<id>&after=<sequence>", "/events?execution=<a>&execution=<b>"],
      heartbeat_ms: limits.heartbeat_ms,
      frame_bytes: limits.frame_bytes,
      subscriber_queue_bytes: limits.subscriber_queue_bytes,
      lagging_kept_bytes: limits.lagging_kept_bytes,
    },
    deadlines: {
      deadline_ms: "The start request's deadline, counted from admission: queue time included, so it bounds the caller's wait.",
      timeout_ms: "The capability's own timeout (its declaration), counted from the handler's start. When both are set, the earlier one wins.",
      on_expiry: `The handler is cancelled cooperatively; if it has not finished grace_ms (${limits.grace_ms}) later, its worker is terminated and replaced, and the execution fails deadline_exceeded. An execution still queued when its deadline_ms passes never starts: it ends cancelled with deadline_exceeded (stage queue, not_applied).`,
    },
    limits: { ...limits },
    compatibility: "Clients ignore event types they do not know; schema_version moves only for a change a version-1 client could not safely ignore.",
  };
}

/** The document `executions.protocol` serves. */
export type ProtocolDocument = ReturnType<typeof protocolDocument>;

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
      subscriber_queue: limits.subscriber_queue,
    },
    limits: { ...limits },
    compatibility: "Clients ignore event types they do not know; schema_version moves only for a change a version-1 client could not safely ignore.",
  };
}

/** The document `executions.protocol` serves. */
export type ProtocolDocument = ReturnType<typeof protocolDocument>;

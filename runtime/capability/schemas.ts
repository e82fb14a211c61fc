import * as v from "valibot";
import { EXECUTION_ID_PATTERN } from "../execution/execution-id.ts";
import { EXECUTION_STATES } from "../execution/state-machine.ts";

/** An execution id, checked by shape before any look-up (docs/protocol.md). */
export function executionIdSchema() {
  return v.pipe(
    v.string(),
    v.regex(EXECUTION_ID_PATTERN, "must be an execution id like x-20260908T010203Z-0a1b2c3d"),
    v.description("An execution id: x-<UTC yyyymmddThhmmssZ>-<8 lower hex>."),
  );
}

/** An execution state. */
export function executionStateSchema() {
  return v.picklist(EXECUTION_STATES);
}

/** The snapshot as published in schemas: the fields clients rely on, others allowed (docs/protocol.md). */
export function executionSnapshotSchema() {
  return v.looseObject({
    id: v.string(),
    capability: v.string(),
    state: executionStateSchema(),
    created_at: v.string(),
    last_sequence: v.number(),
    links: v.looseObject({ self: v.string(), events: v.string(), socket: v.string(), cockpit: v.string() }),
  });
}

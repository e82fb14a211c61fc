import * as v from "valibot";
import { EXECUTION_ID_PATTERN, impossibleIdDate, isExecutionId } from "../execution/execution-id.ts";
import { EXECUTION_STATES } from "../execution/state-machine.ts";

/** An execution id, checked by shape before any look-up (docs/protocol.md). */
export function executionIdSchema() {
  // One problem an id: the date it names no moment is said (month 13, the 30th of February), once
  // — the pattern and the calendar's check each said the same sentence (MCP/CLI tester, session 48).
  const problem = (issue: { input: unknown }) => {
    const date = typeof issue.input === "string" ? impossibleIdDate(issue.input) : null;
    return `must be an execution id like x-20260908T010203Z-0a1b2c3d${date === null ? "" : ` (its UTC date and time, yyyymmddThhmmss, name no moment: ${date})`}`;
  };
  return v.pipe(
    v.string(),
    v.regex(EXECUTION_ID_PATTERN, problem),
    // A day its month does not have (the 30th of February): no pattern says it.
    v.check((id: string) => !EXECUTION_ID_PATTERN.test(id) || isExecutionId(id), problem),
    v.description("An execution id: x-<UTC yyyymmddThhmmssZ>-<8 lower hex>."),
  );
}

/**
 * A session key a client chooses (docs/protocol.md): 1–256 characters, none of them a control
 * character or a bidirectional override. Every surface shows it — a terminal, the cockpit, a CI
 * log — and a key holding `ESC ]0;…` would set a window title there, or read in another order.
 */
export function sessionKeySchema() {
  return v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(256),
    v.regex(/^[^\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]*$/, "must hold no control characters (escapes, line breaks, tabs) or bidirectional overrides"),
    v.description("Executions sharing it run one at a time, in order of admission."),
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

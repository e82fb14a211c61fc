import { capability, executionSnapshotSchema, planeOf, sessionKeySchema } from "docket";
import * as v from "valibot";

export default capability({
  id: "executions.start",
  title: "Start an execution",
  description: "Starts a capability as an execution and answers at once with the execution (queued) and its links; follow its events for the outcome.",
  effect: "write",
  execution: "never",
  // Strict: a misspelt member (`runId`, `deadline`) is refused, never dropped, so that a retry
  // that believes itself idempotent cannot run the work twice.
  input: v.strictObject({
    capability: v.pipe(v.string(), v.minLength(1), v.description("The capability to run, like files.digest.")),
    input: v.optional(v.unknown(), {}),
    run_id: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._:-]{1,128}$/, "must be 1-128 characters of A-Z a-z 0-9 . _ : -"), v.description("Idempotency key: the same run_id and input return the original execution."))),
    session_key: v.optional(sessionKeySchema()),
    deadline_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.description("Deadline in milliseconds, counted from admission (queue time included), so it bounds the caller's wait. The capability's own timeout_ms still counts from the handler's start; the earlier one wins. Past it the handler is cancelled, and its worker terminated grace_ms later; an execution still queued then ends cancelled with deadline_exceeded and never starts."))),
  }),
  output: v.object({
    execution: v.union([
      executionSnapshotSchema(),
      // A run_id whose execution is gone but for its identity: no state or details to show.
      v.looseObject({ id: v.string(), capability: v.string(), run_id: v.string(), details_expired: v.literal(true), links: v.looseObject({ self: v.string() }) }),
    ]),
    deduplicated: v.boolean(),
    details_expired: v.pipe(v.optional(v.literal(true)), v.description("A deduplicated start whose original execution's details expired: the run is the same, nothing was started.")),
  }),
  handler(input, ctx) {
    return planeOf(ctx).start(input);
  },
});

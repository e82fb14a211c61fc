import { capability, CapabilityError, executionIdSchema, planeOf } from "docket";
import * as v from "valibot";

export default capability({
  id: "executions.events",
  title: "Read an execution's events",
  description: "Retained events of one execution after a cursor (a sequence number), in order; what a client reads to fill a gap.",
  effect: "read",
  execution: "never",
  input: v.object({
    id: executionIdSchema(),
    after: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.description("Return events with a sequence above this.")), 0),
    limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), 500),
  }),
  output: v.object({
    events: v.array(v.looseObject({ sequence: v.number(), type: v.string() })),
    retained_from: v.number(),
    truncated: v.boolean(),
    last_sequence: v.number(),
  }),
  handler(input, ctx) {
    const plane = planeOf(ctx);
    const page = plane.store.events(input.id, input.after, input.limit);
    if (page) return page;
    // Run by a `docket run` without a server: its events stayed with that run; said, not a bare "no execution".
    const notHeld = plane.whyNotHeld?.(input.id, "has none of its events") ?? null;
    if (notHeld !== null) throw new CapabilityError("not_found", notHeld.message, { suggestion: notHeld.suggestion, context: notHeld.context });
    throw new CapabilityError("not_found", `No execution ${input.id}.`, { context: { id: input.id }, suggestion: "Check the id: executions.list lists the executions this server keeps (the executions_retained most recent)." });
  },
});

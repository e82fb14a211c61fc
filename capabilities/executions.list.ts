import { capability, CapabilityError, executionSnapshotSchema, executionStateSchema, planeOf } from "docket";
import * as v from "valibot";

export default capability({
  id: "executions.list",
  title: "List executions",
  description: "Executions this server ran or was told about, newest first, with counts per state; filter by state and capability, page with the cursor.",
  effect: "read",
  execution: "never",
  input: v.object({
    state: v.optional(executionStateSchema()),
    capability: v.optional(v.string()),
    limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(500)), 50),
    cursor: v.optional(v.pipe(v.string(), v.description("next_cursor of the previous page."))),
  }),
  output: v.object({
    items: v.array(executionSnapshotSchema()),
    next_cursor: v.nullable(v.string()),
    counts: v.record(v.string(), v.number()),
  }),
  handler(input, ctx) {
    try {
      return planeOf(ctx).store.list(input);
    } catch (error) {
      // A cursor this server did not give out is the client's mistake: 400 naming the field.
      if ((error as Error)?.name !== "InvalidCursorError") throw error;
      throw new CapabilityError("invalid_input", (error as Error).message, { context: { field: "cursor", problems: [{ path: "input.cursor", message: "Not a cursor this server gave out" }] } });
    }
  },
});

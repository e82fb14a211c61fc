import { capability, executionIdSchema, executionStateSchema, planeOf } from "docket";
import * as v from "valibot";

export default capability({
  id: "executions.cancel",
  title: "Cancel an execution",
  description: "Asks an execution to stop and answers with a receipt; the terminal state is observed in its events, not promised.",
  effect: "write",
  execution: "never",
  input: v.object({ id: executionIdSchema() }),
  output: v.object({ id: v.string(), state: executionStateSchema(), cancellable: v.boolean(), requested: v.boolean(), recorded: v.boolean(), message: v.string() }),
  handler(input, ctx) {
    return planeOf(ctx).cancel(input.id);
  },
});

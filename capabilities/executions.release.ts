import { capability, executionIdSchema, planeOf } from "docket";
import * as v from "valibot";

export default capability({
  id: "executions.release",
  title: "Release an execution's artifacts",
  description: "Deletes the artifacts of a terminal execution. Refused while it runs and when its outcome is unknown (they are the evidence).",
  effect: "write",
  execution: "never",
  input: v.object({ id: executionIdSchema() }),
  output: v.object({ id: v.string(), released: v.number() }),
  handler(input, ctx) {
    return planeOf(ctx).release(input.id);
  },
});

import { capability, CapabilityError, executionIdSchema, executionSnapshotSchema, planeOf } from "docket";
import * as v from "valibot";

export default capability({
  id: "executions.get",
  title: "Read an execution",
  description: "The snapshot of one execution: state, steps, progress, diagnostics, log tail, output or failure, and its links.",
  effect: "read",
  execution: "never",
  input: v.object({ id: executionIdSchema() }),
  output: executionSnapshotSchema(),
  handler(input, ctx) {
    const snapshot = planeOf(ctx).store.get(input.id);
    if (!snapshot) throw new CapabilityError("not_found", `No execution ${input.id}.`, { context: { id: input.id }, suggestion: "Check the id: executions.list lists the executions this server keeps (the executions_retained most recent)." });
    return snapshot;
  },
});

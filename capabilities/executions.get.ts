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
    const plane = planeOf(ctx);
    const snapshot = plane.store.get(input.id);
    if (snapshot) return snapshot;
    // Run by a `docket run` without a server: its end as its mark tells it, or why there is none yet.
    const answer = plane.ranWithoutServer?.(input.id) ?? null;
    if (answer !== null) {
      if ("ended" in answer) return answer.ended;
      throw new CapabilityError("not_found", answer.failure.message, { context: answer.failure.context, suggestion: answer.failure.suggestion });
    }
    throw new CapabilityError("not_found", `No execution ${input.id}.`, { context: { id: input.id }, suggestion: "Check the id: executions.list lists the executions this server keeps (the executions_retained most recent)." });
  },
});

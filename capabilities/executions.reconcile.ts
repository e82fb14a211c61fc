import { capability, executionIdSchema, executionStateSchema, planeOf } from "docket";
import * as v from "valibot";

const outcome = v.picklist(["applied", "not_applied"]);

export default capability({
  id: "executions.reconcile",
  title: "Reconcile an unknown outcome",
  description:
    "Settles an execution that ended with an unknown outcome. With outcome (applied | not_applied) you record what you found, with a note saying why; " +
    "without it, the capability's own reconcile() checks the world and its evidence is recorded. Either way an execution.reconciled event follows its completion: " +
    "its state never changes, the snapshot shows the reconciliation, and its artifacts may then be released.",
  effect: "write",
  execution: "never",
  input: v.object({
    id: executionIdSchema(),
    outcome: v.optional(v.pipe(outcome, v.description("What you found: applied (it took effect) or not_applied. Leave out to run the capability's own check."))),
    note: v.optional(v.pipe(v.string(), v.maxLength(4096, "must be at most 4096 characters"), v.description("Why: what you checked and what you saw."))),
  }),
  output: v.object({
    id: v.string(),
    state: executionStateSchema(),
    reconciled: v.boolean(),
    reconciliation: v.nullable(
      v.looseObject({ outcome, method: v.picklist(["manual", "check", "run"]), actor: v.looseObject({ kind: v.string() }), note: v.nullable(v.string()), at: v.string(), evidence: v.optional(v.unknown()) }),
    ),
    check: v.nullable(v.looseObject({ outcome: v.picklist(["applied", "not_applied", "unknown"]), evidence: v.optional(v.unknown()), note: v.optional(v.string()) })),
    message: v.string(),
  }),
  handler(input, ctx) {
    return planeOf(ctx).reconcile(input);
  },
});

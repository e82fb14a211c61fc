import { capability, planeOf } from "docket";
import * as v from "valibot";

export default capability({
  id: "executions.protocol",
  title: "The event protocol",
  description: "The whole event contract: schema_version, the JSON Schema every event validates against, the live channel's control messages, states and moves, error codes, and the limits in force.",
  effect: "read",
  execution: "never",
  input: v.object({}),
  output: v.looseObject({ schema_version: v.string(), event_schema: v.record(v.string(), v.unknown()), control_schema: v.record(v.string(), v.unknown()), limits: v.record(v.string(), v.number()) }),
  handler(_input, ctx) {
    return planeOf(ctx).protocol();
  },
});

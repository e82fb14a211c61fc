import { capability, describeCapability, planeOf } from "docket";
import * as v from "valibot";

const describe = v.looseObject({ id: v.string(), title: v.string(), description: v.string(), effect: v.picklist(["read", "write"]) });

export default capability({
  id: "capabilities.list",
  title: "List capabilities",
  description: "Every loaded capability with its schemas, and every capability file that failed to load.",
  effect: "read",
  execution: "never",
  input: v.object({}),
  output: v.object({
    capabilities: v.array(describe),
    load_errors: v.array(v.object({ file: v.string(), line: v.nullable(v.number()), column: v.nullable(v.number()), reason: v.string() })),
  }),
  handler(_input, ctx) {
    const plane = planeOf(ctx);
    return {
      capabilities: plane.capabilities().map(describeCapability),
      load_errors: plane.loadErrors(),
    };
  },
});

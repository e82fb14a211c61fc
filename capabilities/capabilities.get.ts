import { capability, CapabilityError, describeCapability, planeOf } from "docket";
import * as v from "valibot";

export default capability({
  id: "capabilities.get",
  title: "Show a capability",
  description: "One loaded capability: its description, effect, input and output JSON Schemas, examples.",
  effect: "read",
  execution: "never",
  input: v.object({ id: v.pipe(v.string(), v.minLength(1), v.description("The capability id, like files.digest.")) }),
  output: v.looseObject({ id: v.string(), title: v.string(), input_schema: v.record(v.string(), v.unknown()), output_schema: v.record(v.string(), v.unknown()) }),
  handler(input, ctx) {
    const found = planeOf(ctx).capability(input.id);
    if (!found) {
      const { message, suggestion } = planeOf(ctx).unknownCapability(input.id);
      throw new CapabilityError("not_found", message, { suggestion, context: { id: input.id } });
    }
    return describeCapability(found);
  },
});

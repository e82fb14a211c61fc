import { capability, executionIdSchema, planeOf } from "docket";
import * as v from "valibot";

export default capability({
  id: "executions.artifacts",
  title: "List an execution's artifacts",
  description: "The files an execution wrote to its managed output folder, with size and SHA-256; download one from /api/v1/executions/artifact?id=&name=.",
  effect: "read",
  execution: "never",
  input: v.object({ id: executionIdSchema() }),
  output: v.object({ id: v.string(), artifacts: v.array(v.object({ name: v.string(), bytes: v.number(), sha256: v.pipe(v.nullable(v.string()), v.description("Null for a file larger than artifact_bytes, which ctx.artifacts.write cannot have written: not hashed.")) })) }),
  handler(input, ctx) {
    return { id: input.id, artifacts: planeOf(ctx).artifacts(input.id) };
  },
});

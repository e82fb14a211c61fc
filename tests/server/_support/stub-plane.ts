import * as v from "valibot";
import { capability } from "../../../runtime/capability/declaration.ts";
import type { EdgeInfo, ExecutionPlane } from "../../../runtime/execution/plane.ts";
import { defaultLimits } from "../../../runtime/execution/limits.ts";
import { buildFailure, FailureError } from "../../../runtime/execution/failure.ts";
import { createMemoryStore } from "../../../runtime/store/memory-store.ts";
import { registered } from "../../_support/registered.ts";

const read = capability({
  id: "demo.echo",
  title: "Echo",
  description: "Answers its input.",
  effect: "read",
  input: v.object({ n: v.optional(v.number()), flag: v.optional(v.boolean()), tags: v.optional(v.array(v.string())) }),
  output: v.unknown(),
  handler: (input) => input,
});
const write = capability({ id: "demo.change", title: "Change", description: "Changes something.", effect: "write", input: v.object({}), output: v.unknown(), handler: () => ({}) });
const crash = capability({ id: "demo.crash", title: "Crash", description: "Throws.", effect: "read", input: v.object({}), output: v.unknown(), handler: () => ({}) });

/** A plane over three fixed capabilities whose `call` records the edge; `demo.crash` throws an unexpected error, `demo.echo` with n=429 a capacity failure. */
export function stubPlane() {
  const limits = defaultLimits();
  const capabilities = [registered(read), registered(write), registered(crash)];
  const calls: Array<{ id: string; input: unknown; edge: EdgeInfo }> = [];
  const plane = {
    root: "/secret/checkout",
    limits,
    store: createMemoryStore({ limits }),
    capabilities: () => capabilities,
    capability: (id: string) => capabilities.find((c) => c.id === id) ?? null,
    loadErrors: () => [],
    start: () => {
      throw new Error("not in the stub");
    },
    cancel: () => {
      throw new Error("not in the stub");
    },
    async call(id: string, input: unknown, edge: EdgeInfo) {
      calls.push({ id, input, edge });
      if (id === "demo.crash") throw new Error("boom in /secret/runtime/engine.ts");
      if ((input as { n?: number }).n === 429) {
        throw new FailureError(buildFailure({ error_code: "capacity", stage: "admit", message: "Full.", context: { retry_after_s: 3 }, ...edge }));
      }
      return input;
    },
    handle: () => {
      throw new Error("not in the stub");
    },
  } as unknown as ExecutionPlane;
  return { plane, calls };
}

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import * as v from "valibot";
import { parsesUnchanged } from "../../runtime/execution/_parses-unchanged.ts";
import { BUILTINS } from "../../runtime/capability/builtins.ts";
import type { AnySchema } from "../../runtime/capability/declaration.ts";
import { initialSnapshot } from "../../runtime/store/_fold.ts";
import { newExecution } from "../store/_fixtures.ts";

/** The promise: whenever parsesUnchanged says so, valibot passes and gives back an equal value, members in the same order. */
function agrees(schema: AnySchema, value: unknown): void {
  if (!parsesUnchanged(schema, value)) return;
  const parsed = v.safeParse(schema, value);
  expect(parsed.success).toBe(true);
  expect(Bun.deepEquals(parsed.output, value, true)).toBe(true);
  expect(JSON.stringify(parsed.output)).toBe(JSON.stringify(value));
}

// The snapshot as the stores make it: its first members in the published schema's order.
const snapshot = () =>
  initialSnapshot({ ...newExecution(1, { capability: "bench.noop" }), capability_version: "sha256:e131839e40a85588" }, "2026-12-01T13:34:04.495Z") as unknown as Record<string, unknown>;

describe("parsesUnchanged", () => {
  const start = BUILTINS["executions.start.ts"]!.output;

  test("parsesUnchanged passes executions.start's answer as the stores make it, so it goes out uncopied", () => {
    const answer = { execution: snapshot(), deduplicated: false };
    expect(parsesUnchanged(start, answer)).toBe(true);
    agrees(start, answer);
  });

  test("parsesUnchanged passes executions.start's request as clients send it, and leaves a bad one to valibot", () => {
    const input = BUILTINS["executions.start.ts"]!.input;
    expect(parsesUnchanged(input, { capability: "bench.noop", input: {} })).toBe(true);
    expect(parsesUnchanged(input, { capability: "files.digest", input: { path: "a" }, run_id: "r-1", deadline_ms: 5000 })).toBe(true);
    // The default of `input`, an empty capability, a bad run_id, a fractional deadline: valibot says.
    expect(parsesUnchanged(input, { capability: "bench.noop" })).toBe(false);
    expect(parsesUnchanged(input, { capability: "", input: {} })).toBe(false);
    expect(parsesUnchanged(input, { capability: "x", input: {}, run_id: "a b" })).toBe(false);
    expect(parsesUnchanged(input, { capability: "x", input: {}, deadline_ms: 1.5 })).toBe(false);
    // A member it does not declare: refused (strict), never dropped.
    expect(parsesUnchanged(input, { capability: "x", input: {}, runId: "r-1" })).toBe(false);
    expect(parsesUnchanged(v.strictObject({ a: v.string() }), { a: "x" })).toBe(true);
    agrees(input, { capability: "files.digest", input: { path: "a" }, run_id: "r-1", deadline_ms: 5000 });
  });

  test("parsesUnchanged leaves to valibot what it would change or refuse", () => {
    // A member an object drops, a wrong type, a missing member, members out of order, a default.
    expect(parsesUnchanged(start, { execution: snapshot(), deduplicated: false, extra: 1 })).toBe(false);
    expect(parsesUnchanged(start, { execution: snapshot(), deduplicated: "no" })).toBe(false);
    expect(parsesUnchanged(start, { execution: snapshot() })).toBe(false);
    expect(parsesUnchanged(start, { deduplicated: false, execution: snapshot() })).toBe(false);
    const { id: _, ...withoutId } = snapshot();
    expect(parsesUnchanged(start, { execution: { ...withoutId, id: "x" }, deduplicated: false })).toBe(false);
    expect(parsesUnchanged(v.object({ a: v.optional(v.number(), 1) }), {})).toBe(false);
    expect(parsesUnchanged(v.object({ a: v.pipe(v.string(), v.minLength(2)) }), { a: "a" })).toBe(false);
    expect(parsesUnchanged(v.object({ a: v.pipe(v.string(), v.trim()) }), { a: "abc" })).toBe(false);
    expect(parsesUnchanged(v.object({ a: v.pipe(v.string(), v.description("A.")) }), { a: "abc" })).toBe(true);
    expect(parsesUnchanged(v.looseObject({ a: v.string() }), JSON.parse('{"a":"x","__proto__":1}'))).toBe(false);
    expect(parsesUnchanged(v.array(v.number()), [1, , 3])).toBe(false);
    expect(parsesUnchanged(v.object({ at: v.string() }), { at: new Date() })).toBe(false);
  });

  test("parsesUnchanged never says unchanged where valibot disagrees (random schemas and values)", () => {
    const leaf = fc.constantFrom<AnySchema>(v.string(), v.number(), v.boolean(), v.null(), v.literal("a"), v.literal(1), v.picklist(["a", "b"]), v.unknown(), v.any());
    const schema = fc.letrec<{ schema: AnySchema }>((tie) => ({
      schema: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        leaf,
        tie("schema").map((s) => v.optional(s)),
        tie("schema").map((s) => v.optional(s, "d")),
        tie("schema").map((s) => v.nullable(s)),
        tie("schema").map((s) => v.array(s)),
        tie("schema").map((s) => v.pipe(s as never, v.description("d")) as unknown as AnySchema),
        fc.constantFrom<AnySchema>(
          v.pipe(v.string(), v.minLength(1), v.maxLength(2)),
          v.pipe(v.string(), v.regex(/^[ab]+$/)),
          v.pipe(v.string(), v.regex(/a/g)),
          v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1)),
          v.pipe(v.array(v.unknown()), v.minLength(1)),
          v.pipe(v.string(), v.transform((x) => x)),
        ),
        fc.tuple(tie("schema"), tie("schema")).map(([a, b]) => v.union([a, b] as never)),
        fc.dictionary(fc.constantFrom("a", "b", "c"), tie("schema"), { maxKeys: 3 }).map((e) => v.object(e)),
        fc.dictionary(fc.constantFrom("a", "b", "c"), tie("schema"), { maxKeys: 3 }).map((e) => v.looseObject(e)),
      ),
    })).schema;
    const value = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.constantFrom("a", "b", "ab", "", 1, 0, 0.5, -1, Number.NaN, true, null, undefined, "d"),
        fc.array(tie("value"), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom("a", "b", "c", "d"), tie("value"), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(fc.property(schema, value, (s, x) => agrees(s, x)), { numRuns: 5000 });
  });
});

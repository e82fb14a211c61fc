import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import * as v from "valibot";
import { parsesUnchanged } from "../../runtime/execution/_parses-unchanged.ts";
import { BUILTINS } from "../../runtime/capability/builtins.ts";
import type { AnySchema } from "../../runtime/capability/declaration.ts";

/** The promise: whenever parsesUnchanged says so, valibot passes and gives back an equal value, members in the same order. */
function agrees(schema: AnySchema, value: unknown): void {
  if (!parsesUnchanged(schema, value)) return;
  const parsed = v.safeParse(schema, value);
  expect(parsed.success).toBe(true);
  expect(Bun.deepEquals(parsed.output, value, true)).toBe(true);
  expect(JSON.stringify(parsed.output)).toBe(JSON.stringify(value));
}

const snapshot = () => ({
  id: "x-20261201T133404Z-347556fd",
  capability: "bench.noop",
  state: "queued",
  created_at: "2026-12-01T13:34:04.495Z",
  last_sequence: 1,
  links: { self: "/s", events: "/e", socket: "/w", cockpit: "/c" },
  actor: { kind: "http" },
  input: {},
  failure: null,
  steps: [],
});

describe("parsesUnchanged", () => {
  const start = BUILTINS["executions.start.ts"]!.output;

  test("parsesUnchanged passes executions.start's answer as the engine makes it", () => {
    const answer = { execution: snapshot(), deduplicated: false };
    expect(parsesUnchanged(start, answer)).toBe(true);
    agrees(start, answer);
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
    expect(parsesUnchanged(v.object({ a: v.pipe(v.string(), v.minLength(2)) }), { a: "abc" })).toBe(false);
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
        fc.tuple(tie("schema"), tie("schema")).map(([a, b]) => v.union([a, b] as never)),
        fc.dictionary(fc.constantFrom("a", "b", "c"), tie("schema"), { maxKeys: 3 }).map((e) => v.object(e)),
        fc.dictionary(fc.constantFrom("a", "b", "c"), tie("schema"), { maxKeys: 3 }).map((e) => v.looseObject(e)),
      ),
    })).schema;
    const value = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.constantFrom("a", "b", 1, 0, Number.NaN, true, null, undefined, "d"),
        fc.array(tie("value"), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom("a", "b", "c", "d"), tie("value"), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(fc.property(schema, value, (s, x) => agrees(s, x)), { numRuns: 5000 });
  });
});

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { jsonText } from "../../runtime/execution/plain-json.ts";
import { MAX_INPUT_DEPTH } from "../../runtime/execution/json-depth.ts";

const MIB = 1024 * 1024;
const written = (value: unknown, limit = MIB) => jsonText(value, MAX_INPUT_DEPTH, "output", limit);
const CLASS = "not a plain object, which JSON writes as its own fields only";

describe("jsonText", () => {
  test("writes plain JSON as JSON.stringify writes it, whatever its shape", () => {
    const plain = fc.oneof(fc.jsonValue(), fc.anything({ withNullPrototype: true, withDate: true, withSparseArray: true, maxDepth: 5 }).filter(isPlainEnough));
    fc.assert(
      fc.property(plain, (value) => {
        expect(written(value, 2 ** 30)).toEqual({ ok: true, text: JSON.stringify(value) });
      }),
      { numRuns: 500 },
    );
    const value = { a: [1, undefined, null], b: undefined, at: new Date(0), bad: new Date(NaN), "é \"q\"\n": "\u2028\ud800", n: -0, big: 1e21 };
    expect(written(value)).toEqual({ ok: true, text: JSON.stringify(value) });
    expect(written(undefined)).toEqual({ ok: true, text: undefined });
    expect(written("x")).toEqual({ ok: true, text: '"x"' });
  });

  test("an own __proto__ member is written as data, a JSON.rawJSON as its text", () => {
    const value = JSON.parse('{"__proto__": {"a": 1}, "t": [2]}');
    expect(written(value)).toEqual({ ok: true, text: '{"__proto__":{"a":1},"t":[2]}' });
    const raw = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;
    expect(written({ n: raw("12345678901234567890"), s: [raw('"x"')] })).toEqual({ ok: true, text: '{"n":12345678901234567890,"s":["x"]}' });
  });

  test("reads a getter of a plain object once, and writes what that read returned", () => {
    let reads = 0;
    const value = {
      get g() {
        reads++;
        return reads === 1 ? { n: 1 } : new Map([[1, 2]]);
      },
      after: 2,
    };
    expect(written(value)).toEqual({ ok: true, text: '{"g":{"n":1},"after":2}' });
    expect(reads).toBe(1);
  });

  test("calls each toJSON once, with its key, and writes what it returned", () => {
    const calls: string[] = [];
    const counted = { toJSON: (key: string) => (calls.push(key), { calls: calls.length }) };
    expect(written({ a: counted, list: [counted] })).toEqual({ ok: true, text: '{"a":{"calls":1},"list":[{"calls":2}]}' });
    expect(calls).toEqual(["a", "0"]);
  });

  test("runs a Proxy's traps as JSON.stringify runs them, once each, and writes what its first answers said", () => {
    const traps = (answers: Array<Array<string>>) => {
      const seen: string[] = [];
      let keysAsked = 0;
      const proxy = new Proxy({ a: 1, b: 2, c: 3 } as Record<string, number>, {
        ownKeys(target) {
          seen.push("ownKeys");
          return answers[keysAsked++] ?? Reflect.ownKeys(target);
        },
        getOwnPropertyDescriptor(target, key) {
          seen.push(`describe ${String(key)}`);
          return Reflect.getOwnPropertyDescriptor(target, key);
        },
        get(target, key) {
          seen.push(`get ${String(key)}`);
          return Reflect.get(target, key);
        },
      });
      return { proxy, seen };
    };
    // Its keys answer otherwise each time they are asked: asked once, the text has the first answer's.
    const flipping = traps([["a"], ["a", "b", "c"]]);
    expect(written({ p: flipping.proxy })).toEqual({ ok: true, text: '{"p":{"a":1}}' });
    const native = traps([["a"], ["a", "b", "c"]]);
    expect(JSON.stringify({ p: native.proxy })).toBe('{"p":{"a":1}}');
    expect(flipping.seen.filter((trap) => trap !== "getPrototypeOf")).toEqual(native.seen);
    expect(flipping.seen.filter((trap) => trap === "ownKeys")).toHaveLength(1);
  });

  test("a toJSON put on Array.prototype is called once per array, as JSON calls it, not again on the copy written", () => {
    let calls = 0;
    const proto = Array.prototype as unknown as { toJSON?: unknown };
    // What it returns is an array too: JSON does not call its toJSON, and neither may the text's writing.
    proto.toJSON = function (this: unknown[]) {
      calls++;
      return ["call", calls, this.length];
    };
    try {
      expect(written({ a: [1, [2]], b: [] })).toEqual({ ok: true, text: '{"a":["call",1,2],"b":["call",2,0]}' });
      expect(calls).toBe(2);
    } finally {
      delete proto.toJSON;
    }
    expect(written({ a: [1, [2]] })).toEqual({ ok: true, text: '{"a":[1,[2]]}' });
  });

  test("refuses what JSON would not write as it is, naming where, as the check of a returned output names it", () => {
    class Reading {
      constructor(readonly value: unknown) {}
      toJSON() {
        return this.value;
      }
    }
    expect(written({ counts: new Map([["a", 1]]) })).toEqual({ ok: false, problem: { reason: "not_json", path: "output.counts", what: "a Map, which JSON writes as {}" } });
    expect(written({ items: [1, { ratio: NaN }] })).toEqual({ ok: false, problem: { reason: "not_json", path: "output.items[1].ratio", what: "NaN, which JSON writes as null" } });
    expect(written({ p: [new (class Point {})()] })).toMatchObject({ ok: false, problem: { path: "output.p[0]", what: `a Point object, ${CLASS}` } });
    expect(written({ r: new Reading(Infinity) })).toMatchObject({ ok: false, problem: { path: "output.r", what: "a Reading object whose toJSON() returns Infinity, which JSON writes as null" } });
    expect(written({ s: new String("s"), n: 1n })).toMatchObject({ ok: false, problem: { path: "output.s", what: `a String object, ${CLASS}` } });
    const throws = { toJSON: () => { throw new RangeError("secret 42"); } };
    expect(written({ items: [throws] })).toEqual({ ok: false, problem: { reason: "not_json", path: "output.items[0]", what: "an object whose toJSON() threw a RangeError" } });
    const getter = { a: { get b(): number { throw new TypeError("no"); } } };
    expect(written(getter)).toEqual({ ok: false, problem: { reason: "not_json", path: "output.a.b", what: "a value that threw when read (a getter or a Proxy threw a TypeError)" } });
  });

  test("writes with JSON's writer as it was before any capability code ran: a handler's replaced JSON.stringify writes nothing stored", () => {
    const original = JSON.stringify;
    JSON.stringify = (() => '{"forged":true}') as typeof JSON.stringify;
    try {
      expect(written({ list: ["checked"] })).toEqual({ ok: true, text: '{"list":["checked"]}' });
    } finally {
      JSON.stringify = original;
    }
  });

  test("a cycle or nesting past the bound is too deep", () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    expect(written(cycle)).toEqual({ ok: false, problem: { reason: "too_deep" } });
    let deep: unknown = 1;
    for (let i = 0; i < MAX_INPUT_DEPTH + 1; i++) deep = [deep];
    expect(written(deep)).toEqual({ ok: false, problem: { reason: "too_deep" } });
    expect(written((deep as unknown[])[0])).toMatchObject({ ok: true });
  });

  test("stops once past its limit: a Proxy array of 2^31 members (numbers or functions), a value shared on every level", () => {
    const claims = (member: unknown) => new Proxy([], { get: (_, key) => (key === "length" ? 2 ** 31 : key === "toJSON" ? undefined : member) });
    expect(written(claims(1), 4096)).toEqual({ ok: false, over: 4097 });
    expect(written(claims(() => 1), 4096)).toMatchObject({ ok: false, over: expect.any(Number) });
    let shared: unknown = [1];
    for (let i = 0; i < 60; i++) shared = [shared, shared];
    expect(written({ shared }, 4096)).toMatchObject({ ok: false, over: expect.any(Number) });
    // Both too large and not JSON: too large, as the worker always said.
    expect(written({ m: new Map(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i])) }, 4096)).toMatchObject({ ok: false, over: expect.any(Number) });
    expect(written({ text: "a".repeat(4000) }, 4096)).toMatchObject({ ok: true });
    // A JSON.rawJSON counts as the text it is written as.
    const raw = (JSON as unknown as { rawJSON?: (text: string) => unknown }).rawJSON;
    if (raw) expect(written({ raw: raw(`"${"a".repeat(5000)}"`) }, 4096)).toMatchObject({ ok: false, over: expect.any(Number) });
  });
});

/** True for what fast-check made that JSON writes as it is: no Infinity or NaN, boxed value, class instance, function or symbol key. */
function isPlainEnough(value: unknown): boolean {
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value === "string" || typeof value === "boolean" || value === null || value === undefined) return true;
  if (typeof value !== "object") return false;
  if (value instanceof Date) return true;
  if (!Array.isArray(value) && ![Object.prototype, null].includes(Object.getPrototypeOf(value))) return false;
  if (Object.getOwnPropertySymbols(value).length > 0) return false;
  return Object.values(value).every(isPlainEnough);
}

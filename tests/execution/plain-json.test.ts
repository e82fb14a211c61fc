import { describe, expect, test } from "bun:test";
import { isPlainJson, plainJsonProblem, writtenJson } from "../../runtime/execution/plain-json.ts";
import { MAX_INPUT_DEPTH } from "../../runtime/execution/json-depth.ts";

describe("isPlainJson", () => {
  test("takes what JSON holds as it is, and what says how it is written (a Date)", () => {
    expect(isPlainJson({ a: "x", b: [1, 2, null, true], c: { d: 0 }, e: undefined, at: new Date(0) }, MAX_INPUT_DEPTH)).toBe(true);
    expect(isPlainJson(Object.assign(Object.create(null), { a: 1 }), MAX_INPUT_DEPTH)).toBe(true);
  });

  test("refuses what JSON would write as something else, however deep it sits", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const bad of [1n, Promise.resolve(1), new Map(), new Set([1]), Infinity, cycle, () => 1, Symbol("s"), new (class Point {})()]) {
      expect(isPlainJson(bad, MAX_INPUT_DEPTH)).toBe(false);
      expect(isPlainJson({ deep: [{ in: bad }] }, MAX_INPUT_DEPTH)).toBe(false);
    }
    let nested: unknown = 1;
    for (let i = 0; i < MAX_INPUT_DEPTH + 1; i++) nested = [nested];
    expect(isPlainJson(nested, MAX_INPUT_DEPTH)).toBe(false);
  });
});

describe("plainJsonProblem", () => {
  test("names where the value JSON would not keep sits, and what JSON would make of it", () => {
    const at = (value: unknown) => plainJsonProblem(value, MAX_INPUT_DEPTH, "output");
    expect(at({ counts: new Map([["a", 1]]) })).toEqual({ reason: "not_json", path: "output.counts", what: "a Map, which JSON writes as {}" });
    expect(at({ ratio: 1 / 0 })).toEqual({ reason: "not_json", path: "output.ratio", what: "Infinity, which JSON writes as null" });
    expect(at({ items: [{ ok: 1 }, { tags: new Set(["x"]) }] })).toMatchObject({ path: "output.items[1].tags", what: "a Set, which JSON writes as {}" });
    expect(at({ "a b": [0, NaN] })).toMatchObject({ path: 'output["a b"][1]', what: "NaN, which JSON writes as null" });
    expect(at({ n: 10n })).toMatchObject({ path: "output.n", what: "a BigInt, which JSON cannot write" });
    expect(at({ f: () => 1 })).toMatchObject({ path: "output.f", what: "a function, which JSON leaves out" });
    expect(at({ s: Symbol("s") })).toMatchObject({ path: "output.s", what: "a Symbol, which JSON leaves out" });
    expect(at({ p: new (class Point {})() })).toMatchObject({ path: "output.p", what: "a Point object, not a plain object, which JSON writes as its own fields only" });
    expect(at(new Map())).toMatchObject({ path: "output", what: "a Map, which JSON writes as {}" });
    expect(at({ a: "x", b: [1, 2, null, true], c: { d: 0 }, e: undefined, at: new Date(0) })).toBeNull();
  });

  test("a cycle or nesting past the bound is too deep, with no path", () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    expect(plainJsonProblem(cycle, MAX_INPUT_DEPTH, "output")).toEqual({ reason: "too_deep" });
    let fits: unknown = 1;
    for (let i = 0; i < MAX_INPUT_DEPTH; i++) fits = { a: fits };
    expect(plainJsonProblem(fits, MAX_INPUT_DEPTH, "output")).toBeNull();
  });

  test("a million numbers are looked at without a path made for each (a problem at the end is still named)", () => {
    const wide = Array.from({ length: 1_000_000 }, (_, i) => i);
    expect(plainJsonProblem({ z: wide }, MAX_INPUT_DEPTH, "output")).toBeNull();
    wide[999_999] = Infinity;
    expect(plainJsonProblem({ z: wide }, MAX_INPUT_DEPTH, "output")).toMatchObject({ path: "output.z[999999]" });
  });
});

describe("writtenJson", () => {
  const written = (value: unknown) => writtenJson(value, MAX_INPUT_DEPTH, "output");

  test("plain JSON is itself, not a copy; a Date stays a Date", () => {
    const value = { a: [1, undefined, { b: null }], at: new Date(0) };
    expect(written(value)).toEqual({ ok: true, value });
    expect((written(value) as { value: unknown }).value).toBe(value);
  });

  test("what has a toJSON is written as JSON writes it: toJSON called with its key, what it returns in its place", () => {
    class Celsius {
      constructor(readonly degrees: number) {}
      toJSON(key: string) {
        return { key, celsius: this.degrees, at: new Date(0), inner: { toJSON: () => "inner" } };
      }
    }
    const value = { t: new Celsius(2), list: [new Celsius(3)], url: new URL("https://example.com/a"), own: { toJSON: () => [1] } };
    const result = written(value);
    expect(result.ok).toBe(true);
    const copy = (result as { value: unknown }).value;
    expect(copy).toEqual({ t: { key: "t", celsius: 2, at: new Date(0), inner: "inner" }, list: [{ key: "0", celsius: 3, at: new Date(0), inner: "inner" }], url: "https://example.com/a", own: [1] });
    expect(JSON.stringify(copy)).toBe(JSON.stringify(value));
    expect(written(new Celsius(1))).toMatchObject({ ok: true, value: { key: "", celsius: 1 } });
  });

  test("a toJSON that returns what JSON would not write as it is, or throws, is refused at the holder's path", () => {
    class Reading {
      constructor(readonly value: unknown) {}
      toJSON() {
        return this.value;
      }
    }
    expect(written({ r: new Reading(Infinity) })).toEqual({ ok: false, problem: { reason: "not_json", path: "output.r", what: "a Reading object whose toJSON() returns Infinity, which JSON writes as null" } });
    expect(written({ r: new Reading(new Map()) })).toMatchObject({ problem: { path: "output.r", what: "a Reading object whose toJSON() returns a Map, which JSON writes as {}" } });
    // What toJSON returns is not given a second toJSON: JSON writes a Date there as {}.
    expect(written({ r: new Reading(new Date(0)) })).toMatchObject({ problem: { path: "output.r", what: "a Reading object whose toJSON() returns a Date object, not a plain object, which JSON writes as its own fields only" } });
    expect(written({ r: new Reading({ deep: [{ toJSON: () => NaN }] }) })).toMatchObject({ problem: { path: "output.r.deep[0]", what: "an object whose toJSON() returns NaN, which JSON writes as null" } });
    const throws = { toJSON: () => { throw new RangeError("secret 42"); } };
    expect(written({ items: [throws] })).toEqual({ ok: false, problem: { reason: "not_json", path: "output.items[0]", what: "an object whose toJSON() threw a RangeError" } });
  });

  test("a class instance is refused where it is, whatever its fields; a getter that throws is named where it is", () => {
    class Point {
      #x = 1;
      get x() {
        return this.#x;
      }
    }
    expect(written({ p: [new Point()] })).toMatchObject({ ok: false, problem: { path: "output.p[0]", what: "a Point object, not a plain object, which JSON writes as its own fields only" } });
    const getter = { a: { get b(): number { throw new TypeError("no"); } } };
    expect(written(getter)).toEqual({ ok: false, problem: { reason: "not_json", path: "output.a.b", what: "a value that threw when read (a getter or a Proxy threw a TypeError)" } });
  });

  test("an own __proto__ member is copied as data; nesting past the bound through a toJSON is too deep", () => {
    const value = JSON.parse('{"__proto__": {"a": 1}, "t": 1}');
    value.t = { toJSON: () => 2 };
    const copy = (written(value) as { value: Record<string, unknown> }).value;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(JSON.stringify(copy)).toBe('{"__proto__":{"a":1},"t":2}');
    const cycle: Record<string, unknown> = {};
    cycle.self = { toJSON: () => cycle };
    expect(written(cycle)).toEqual({ ok: false, problem: { reason: "too_deep" } });
  });

  test("isPlainJson calls no toJSON and walks a plain object whatever members it has, as before", () => {
    let called = false;
    const holder = new (class Reading {
      toJSON() {
        called = true;
        return Infinity;
      }
    })();
    expect(isPlainJson({ r: holder }, MAX_INPUT_DEPTH)).toBe(true);
    expect(isPlainJson({ toJSON: () => 1 }, MAX_INPUT_DEPTH)).toBe(false);
    expect(called).toBe(false);
  });
});

import { describe, expect, test } from "bun:test";
import { isPlainJson, plainJsonProblem } from "../../runtime/execution/plain-json.ts";
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

import { describe, expect, test } from "bun:test";
import { inputShapeProblem, MAX_INPUT_DEPTH, nestsDeeperThan } from "../../runtime/execution/json-depth.ts";

describe("inputShapeProblem", () => {
  test("names where a number JSON cannot hold is, through objects and arrays", () => {
    expect(inputShapeProblem(Infinity, MAX_INPUT_DEPTH)).toEqual({ reason: "not_finite", path: "(the input)", value: "Infinity" });
    expect(inputShapeProblem({ steps: -Infinity }, MAX_INPUT_DEPTH)).toEqual({ reason: "not_finite", path: "steps", value: "-Infinity" });
    expect(inputShapeProblem({ items: [{ size: 1 }, { size: 2, deep: [0, [1, NaN]] }] }, MAX_INPUT_DEPTH)).toEqual({ reason: "not_finite", path: "items[1].deep[1][1]", value: "NaN" });
    expect(inputShapeProblem([[Infinity]], MAX_INPUT_DEPTH)).toMatchObject({ path: "[0][0]" });
    expect(inputShapeProblem({ a: "x", b: [1, 2, null, true], c: { d: 0 } }, MAX_INPUT_DEPTH)).toBeNull();
  });

  test("too deep is too deep, at the same depth nestsDeeperThan counts", () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_INPUT_DEPTH + 1; i++) deep = [deep];
    expect(inputShapeProblem(deep, MAX_INPUT_DEPTH)).toEqual({ reason: "too_deep" });
    expect(nestsDeeperThan(deep, MAX_INPUT_DEPTH)).toBe(true);
    let fits: unknown = 1;
    for (let i = 0; i < MAX_INPUT_DEPTH; i++) fits = { a: fits };
    expect(inputShapeProblem(fits, MAX_INPUT_DEPTH)).toBeNull();
    expect(nestsDeeperThan(fits, MAX_INPUT_DEPTH)).toBe(false);
  });

  test("a million numbers are looked at without a path made for each (a problem at the end is still named)", () => {
    const wide = Array.from({ length: 1_000_000 }, (_, i) => i);
    expect(inputShapeProblem({ z: wide }, MAX_INPUT_DEPTH)).toBeNull();
    wide[999_999] = Infinity;
    expect(inputShapeProblem({ z: wide }, MAX_INPUT_DEPTH)).toMatchObject({ path: "z[999999]" });
  });
});

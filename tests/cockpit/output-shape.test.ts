import { describe, expect, test } from "bun:test";
import { outputShape } from "../../cockpit/output-shape.ts";

describe("outputShape", () => {
  test("a table's cell is the row's own member: a row without a \"__proto__\" member shows an empty cell, not Object.prototype as {} (cockpit tester, session 46)", () => {
    const shape = outputShape(JSON.parse('[{"__proto__":{"p":1},"a":1},{"a":2},{"toString":"own","a":3}]')) as { kind: string; table: { columns: string[]; rows: string[][] } };
    expect(shape.kind).toBe("table");
    expect(shape.table.columns).toEqual(["__proto__", "a", "toString"]);
    expect(shape.table.rows).toEqual([
      ['{"p":1}', "1", ""],
      ["", "2", ""],
      ["", "3", "own"],
    ]);
  });
});

// Small things pages show: an output table's cells (output-shape.ts), the executions page's counts heading.
import { afterAll, describe, expect, test } from "bun:test";
import { outputShape } from "../../cockpit/output-shape.ts";
import { countsOf, executionsHtml, runningSnapshot } from "./_support/fixtures.ts";
import { closeParsed, parseHtml } from "./_support/html.ts";

afterAll(closeParsed);

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

describe("the executions page's counts", () => {
  test("say they are every capability's when the list is filtered by one (cockpit tester, session 46: 'Succeeded 89' beside a list of one)", () => {
    const heading = (filter: { capability?: string }) => parseHtml(executionsHtml([runningSnapshot()], countsOf({ succeeded: 89 }), filter)).querySelector("#counts-heading")!.textContent;
    expect(heading({})).toBe("By state");
    expect(heading({ capability: "team.look" })).toBe("By state, every capability");
  });
});

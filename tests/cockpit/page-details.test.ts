// Small things pages show: an output table's cells (output-shape.ts), the executions page's counts heading.
import { afterAll, describe, expect, test } from "bun:test";
import { MAX_CELLS, outputShape, SHAPED_CHARS } from "../../cockpit/output-shape.ts";
import { OutputView } from "../../cockpit/components/output-view.tsx";
import { countsOf, executionHtml, executionsHtml, ID, runningSnapshot } from "./_support/fixtures.ts";
import { shownCut, SHOWN_MESSAGE_CHARS, SHOWN_TITLE_CHARS } from "../../cockpit/format.ts";
import { loadPage } from "./_support/dom.ts";
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

  test("a column whose name shows nothing (empty, spaces, only U+202E) is named by its key quoted, each invisible character escaped, so each is a header of its own (cockpit tester, session 50: nameless sort buttons)", () => {
    const shape = outputShape([{ "": 1, " ": 2, "\u202e": 3, ok: 4 }]) as { kind: string; table: { columns: string[]; labels: string[] } };
    expect(shape.kind).toBe("table");
    expect(shape.table.columns).toEqual(['""', '"\\u0020"', '"\\u202e"', "ok"]);
    expect(shape.table.labels).toEqual(shape.table.columns);
    // Every key that draws nothing, or that differs from another only in what does not show, or that reads as a quoted one, is a header of its own (checking tester, session 50).
    const keys = ["\u200b", "\u200b\u200b", "\u200e", "\u2060", "\u00ad", "\u180e", "\u3164", "\u2800", '""', '" "', '"\\u202e"', "a\ufe0f", "a\u034f", "\u034f", "x\u180b", "a ", " a", "a  b", "a b", "  ", "a", "a\u202e", "a\u200b", "naïve", "नाम", "日本"];
    // A table shows 20 columns at most: each key is the one column of its own table.
    const headers = keys.map((key) => (outputShape([{ [key]: 1 }]) as { table: { columns: string[] } }).table.columns[0]!);
    expect(new Set(headers).size).toBe(keys.length);
    for (const header of headers) expect(header).toMatch(/[^\p{C}\p{Z}\p{M}]/u);
    // Keys every character of which shows are headed as they are.
    expect(headers.slice(-3)).toEqual(["naïve", "नाम", "日本"]);
    expect([headers[keys.indexOf("a")], headers[keys.indexOf("a b")]]).toEqual(["a", "a b"]);
  });

  test("a column's long name is cut in its header and in the label each cell carries; the tables of one value show MAX_CELLS cells at most (cockpit tester, session 48: a 2 MB output made a 1 GB page)", () => {
    const first: Record<string, number> = {};
    for (let i = 0; i < 20; i++) first[`c${i}_${"L".repeat(20_000)}`] = i;
    const shape = outputShape([first, ...Array.from({ length: 499 }, () => ({}))]) as { kind: string; table: { columns: string[]; labels: string[]; rows: string[][]; more: number } };
    expect(shape.kind).toBe("table");
    expect(Math.max(...shape.table.columns.map((c) => c.length))).toBeLessThanOrEqual(200);
    expect(Math.max(...shape.table.labels.map((c) => c.length))).toBeLessThanOrEqual(40);
    expect(shape.table.labels[3]).toStartWith("c3_LLL");
    expect(shape.table.rows.length).toBe(500);
    const html = String(OutputView({ value: [first, ...Array.from({ length: 499 }, () => ({}))], label: "Output" }));
    expect(html.length).toBeLessThan(2_000_000);

    // Fifty fields, each a table of 500 rows of 20 columns: one budget of cells for them all.
    const table = Array.from({ length: 500 }, (_, row) => Object.fromEntries(Array.from({ length: 20 }, (_, col) => [`k${col}`, row])));
    const record = outputShape(Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`t${i}`, table]))) as { kind: string; fields: Array<{ shape: any }> };
    expect(record.kind).toBe("record");
    const cells = record.fields.reduce((sum, field) => sum + (field.shape.kind === "table" ? field.shape.table.rows.length * field.shape.table.columns.length : 0), 0);
    expect(cells).toBe(MAX_CELLS);
    // The first is whole; those past the cells are JSON blocks while characters are left, then named only.
    expect(record.fields[0]!.shape.table.more).toBe(0);
    expect(record.fields[1]!.shape.kind).toBe("json");
    expect(record.fields.at(-1)!.shape.kind).toBe("omitted");
  });

  test("the shaped view of one value shows SHAPED_CHARS characters in all, whatever its fields are (checking tester, session 48: 41 MB pages, 4.7 s)", () => {
    const page = (value: unknown) => String(OutputView({ value, label: "Output" }));
    const table = Array.from({ length: 500 }, () => Object.fromEntries(Array.from({ length: 20 }, (_, col) => [`k${col}`, "x"])));
    const cases = {
      // A table spending the cells, then 49 fields a one-cell table each, of 160,000 "&" (each drawn as "&amp;").
      worse: { f0: table, ...Object.fromEntries(Array.from({ length: 49 }, (_, i) => [`f${i + 1}`, [{ a: "&".repeat(160_000) }]])) },
      // One string of 8 million "<".
      long: { text: "<".repeat(8_000_000) },
      // Fifty text fields of 160,000 "&".
      texts: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`t${i}`, "&".repeat(160_000)])),
      // Forty-nine fields named with 160,000 "<" each (round 2: names were drawn whole, twice).
      names: Object.fromEntries(Array.from({ length: 49 }, (_, i) => [String(i).padStart(3, "0") + "<".repeat(160_000), [1]])),
    };
    for (const [name, value] of Object.entries(cases)) {
      const html = page(value);
      // The shaped view's characters, and the JSON view's 256 Ki, each drawn escaped at most 5 times over.
      expect({ name, small: html.length < (SHAPED_CHARS + 256 * 1024) * 5 + 200_000 }).toEqual({ name, small: true });
    }
    const long = outputShape(cases.long) as { kind: string; fields: Array<{ shape: { kind: string; left: number; text: string } }> };
    // The field's name ("text", drawn twice) is charged first.
    const left = 8_000_000 - (SHAPED_CHARS - "text".length * 2);
    expect(long.fields[0]!.shape).toMatchObject({ kind: "text", left });
    // Said, not dumped whole should it fail: the pages are megabytes.
    expect(page(cases.long).includes(`${left.toLocaleString("en-US")} more characters not shown here`)).toBe(true);
    const texts = outputShape(cases.texts) as { fields: Array<{ shape: { kind: string } }> };
    expect(texts.fields.filter((field) => field.shape.kind === "omitted").length).toBeGreaterThan(40);
    expect(page(cases.texts).includes("Not shown here: the page shows 512 Ki characters of an output&#39;s fields")).toBe(true);
  });
});

describe("steps and diagnostics on an execution's page", () => {
  test("a step's title and message, and a diagnostic's message, are cut on the page, the same on the server and in the browser (checking tester, session 48: 1,100 steps drew 44 MB)", () => {
    const steps = Array.from({ length: 1_100 }, (_, i) => ({ id: `s${i}`, title: "<".repeat(1_024), state: "succeeded" as const, message: "&".repeat(4_096), started_at: "2026-09-08T01:02:04.000Z", finished_at: "2026-09-08T01:02:05.000Z" }));
    const diagnostics = Array.from({ length: 600 }, () => ({ severity: "error" as const, message: "<".repeat(4_096) }));
    const html = executionHtml(runningSnapshot({ steps, diagnostics } as never));
    expect(html.length).toBeLessThan(12_000_000);
    expect(shownCut("<".repeat(1_024), SHOWN_TITLE_CHARS)).toBe(`${"<".repeat(SHOWN_TITLE_CHARS - 1)}…`);
    // Never inside a surrogate pair: the cut comes before it.
    expect(shownCut(`${"a".repeat(198)}😀xyz`, SHOWN_TITLE_CHARS)).toBe(`${"a".repeat(198)}…`);
    const page = loadPage(executionHtml(runningSnapshot()), { path: `/cockpit/executions/${ID}`, scripts: ["format.js"] });
    try {
      const format = (page.window as unknown as { docket: { format: { cut(text: string, max: number): string } } }).docket.format;
      for (const text of ["short", "<".repeat(1_024), `${"a".repeat(198)}😀xyz`, `x\u202e${"y".repeat(600)}`]) for (const max of [SHOWN_TITLE_CHARS, SHOWN_MESSAGE_CHARS]) expect(format.cut(text, max)).toBe(shownCut(text, max));
    } finally {
      void page.close();
    }
  });
});

describe("the executions page's counts", () => {
  test("say they are every capability's when the list is filtered by one (cockpit tester, session 46: 'Succeeded 89' beside a list of one)", () => {
    const heading = (filter: { capability?: string }) => parseHtml(executionsHtml([runningSnapshot()], countsOf({ succeeded: 89 }), filter)).querySelector("#counts-heading")!.textContent;
    expect(heading({})).toBe("By state");
    expect(heading({ capability: "team.look" })).toBe("By state, every capability");
  });
});

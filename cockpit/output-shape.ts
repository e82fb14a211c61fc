import { shownCut, shownText } from "./format.ts";

/** How the cockpit shows a value: by what it is, not as one JSON text. Its texts are shown text (no bidirectional controls). */
export type OutputShape =
  | { kind: "nothing" }
  | { kind: "scalar"; text: string }
  /** `left`: characters of the string past what is shown (the JSON view, or the API, has them). */
  | { kind: "text"; text: string; left: number }
  | { kind: "table"; table: TableShape }
  | { kind: "record"; fields: Array<{ name: string; shape: OutputShape }> }
  /** `max`: the characters of its JSON text shown at most (formatJson). */
  | { kind: "json"; value: unknown; max?: number }
  /** A field past what one page shows of an output's fields (SHAPED_CHARS): named, not drawn. */
  | { kind: "omitted" };

/** An array of objects as rows and columns, bounded. */
export interface TableShape {
  columns: string[];
  /** Each column's name cut short, for the label each of its cells carries on a narrow screen. */
  labels: string[];
  rows: string[][];
  /** Rows of the array not in `rows` (the JSON view has them all). */
  more: number;
  /** Columns seen but not shown (past MAX_COLUMNS). */
  moreColumns: number;
}

/** Rows a table shows; the JSON view, a click away, has every row. */
export const MAX_ROWS = 500;
const MAX_COLUMNS = 20;
const MAX_CELL = 200;
/** A column's name as each of its cells repeats it (`data-label`): a key of 20,000 characters in every cell made a page of a gigabyte from a 2 MB output (cockpit tester, session 48). */
const MAX_LABEL = 40;
/**
 * Cells all the tables of one value show together: an output of fifty fields, each a table of
 * 500 rows of 20 columns, is not fifty full tables on one page. Rows past it are counted, as rows
 * past MAX_ROWS are, and the JSON view has them.
 */
export const MAX_CELLS = 10_000;
/**
 * Characters the shaped view of one value shows in all — its text blocks, table cells and the JSON
 * of fields shown as JSON — beside the JSON view of the whole (256 Ki characters of its own). Past
 * it a text or a JSON block is cut and the fields after are named only: fifty fields of 160,000
 * characters each drew a 41 MB page in 4.7 s, and the shared cell bound, once spent, turned each
 * remaining table into a JSON block of its own (cockpit checking tester, session 48).
 */
export const SHAPED_CHARS = 512 * 1024;
/** A string longer than this, or with a line break, reads better as a block than inline. */
const LONG_TEXT = 80;
const MAX_FIELDS = 50;

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);


/** A cell's text: scalars as they are, anything else as compact JSON, cut at MAX_CELL characters. */
function cellText(value: unknown): string {
  return shownCut(value === undefined ? "" : typeof value === "string" ? value : (JSON.stringify(value) ?? ""), MAX_CELL);
}

/** Characters that draw nothing a reader tells apart: controls, format characters, spaces but the plain one, blank letters. */
const INVISIBLE = /[\p{C}\p{Z}\p{Default_Ignorable_Code_Point}\u115f\u1160\u3164\uffa0\u2800]/u;
/** A character that draws something: not one of those, nor a mark alone. */
const VISIBLE = /[^\p{C}\p{Z}\p{M}\u115f\u1160\u3164\uffa0\u2800]/u;

/**
 * A column's name as its header shows it: the key as it is when every character of it shows and
 * it does not begin with `"`; otherwise the key quoted as JSON, each character that draws nothing
 * written as its escape (`"\u200b"`), `"` and `\` escaped. A header of no visible text was a sort
 * button of no width and no name, and keys that differ only in what does not show (`a` and
 * `a` + U+202E, an empty key and the key `""`) were headed alike (cockpit testers, session 50).
 */
function columnName(key: string, max: number): string {
  const invisible = (ch: string) => ch !== " " && INVISIBLE.test(ch);
  // Spaces at an edge, or two together, do not show in a header either (HTML folds them).
  if (shownText(key) === key && VISIBLE.test(key) && !key.startsWith('"') && !/^ | $| {2}/.test(key) && ![...key].some(invisible)) return shownCut(key, max);
  // Each space written as an escape too where spaces decide (every one of a key of spaces, folded otherwise).
  const escaped = [...key].map((ch) => (ch === '"' || ch === "\\" ? `\\${ch}` : invisible(ch) || (ch === " " && /^ | $| {2}/.test(key)) ? `\\u${ch.codePointAt(0)!.toString(16).padStart(4, "0")}` : ch)).join("");
  return shownCut(`"${escaped}"`, max);
}

/** What the shaped view of one value may still show: cells of tables (MAX_CELLS), characters (SHAPED_CHARS). */
interface ShapeBudget {
  cells: number;
  chars: number;
}

/** A non-empty array whose every item is an object: a table, of as many rows as `budget` leaves (none left: not a table). */
function tableOf(items: unknown[], budget: ShapeBudget): TableShape | null {
  if (items.length === 0 || !items.every(isPlainObject)) return null;
  const seen: string[] = [];
  const known = new Set<string>();
  for (const item of items.slice(0, MAX_ROWS)) {
    for (const key of Object.keys(item)) {
      if (!known.has(key)) {
        known.add(key);
        seen.push(key);
      }
    }
  }
  const keys = seen.slice(0, MAX_COLUMNS);
  const columns = keys.map((key) => columnName(key, MAX_CELL));
  const labels = keys.map((key) => columnName(key, MAX_LABEL));
  // Each row as its cells' text and the labels they carry cost: rows while both bounds last.
  const perRow = labels.reduce((sum, label) => sum + label.length, 0);
  const most = Math.min(MAX_ROWS, items.length, Math.floor(budget.cells / Math.max(1, keys.length)));
  const rows: string[][] = [];
  for (const item of items.slice(0, most)) {
    // A row's own members only: a row without a "__proto__" column's member read Object.prototype (`{}`).
    const row = keys.map((key) => cellText(Object.hasOwn(item as object, key) ? (item as Record<string, unknown>)[key] : undefined));
    const cost = perRow + row.reduce((sum, cell) => sum + cell.length, 0);
    if (cost > budget.chars) break;
    budget.chars -= cost;
    rows.push(row);
  }
  if (rows.length === 0) return null;
  budget.cells -= rows.length * Math.max(1, keys.length);
  return { columns, labels, rows, more: items.length - rows.length, moreColumns: seen.length - keys.length };
}

/** `value` as a JSON block within what `budget` leaves, charged what it shows; omitted when nothing is left. */
function jsonWithin(value: unknown, budget: ShapeBudget): OutputShape {
  if (budget.chars <= 0) return { kind: "omitted" };
  const length = (JSON.stringify(value ?? null, null, 2) ?? "null").length;
  const max = Math.min(budget.chars, MAX_SHOWN_JSON_FIELD);
  budget.chars -= Math.min(length, max);
  return { kind: "json", value, max };
}

/** How much of a field's JSON one block shows: as much as the page's JSON view of a whole value. */
const MAX_SHOWN_JSON_FIELD = 256 * 1024;

/**
 * The shape a value is shown in: an array of objects is a table, a long string a text block, a
 * scalar itself, an object one level of named parts (each by its own shape), anything else JSON.
 */
export function outputShape(value: unknown, depth = 0, budget: ShapeBudget = { cells: MAX_CELLS, chars: SHAPED_CHARS }): OutputShape {
  if (value === undefined || value === null) return { kind: "nothing" };
  if (typeof value === "string") {
    if (value.length <= LONG_TEXT && !value.includes("\n")) return { kind: "scalar", text: shownText(value) };
    if (budget.chars <= 0) return { kind: "omitted" };
    const shown = Math.min(value.length, budget.chars);
    budget.chars -= shown;
    return { kind: "text", text: shownText(value.slice(0, shown)), left: value.length - shown };
  }
  if (typeof value === "number" || typeof value === "boolean") return { kind: "scalar", text: String(value) };
  // The whole value as JSON: the JSON view, drawn beside the shapes anyway, is all of it.
  const asJson = (): OutputShape => (depth === 0 ? { kind: "json", value } : jsonWithin(value, budget));
  if (Array.isArray(value)) {
    const table = tableOf(value, budget);
    return table ? { kind: "table", table } : asJson();
  }
  if (isPlainObject(value) && depth === 0) {
    const entries = Object.entries(value);
    if (entries.length === 0 || entries.length > MAX_FIELDS) return asJson();
    // A field's name is cut as a column's is, and charged: it is drawn in its heading and again as
    // its block's label (49 names of 160,000 characters drew 64 MB: cockpit checking tester, session 48).
    return {
      kind: "record",
      fields: entries.map(([name, field]) => {
        const shown = shownCut(name, MAX_CELL);
        budget.chars -= Math.min(budget.chars, shown.length * 2);
        return { name: shown, shape: outputShape(field, depth + 1, budget) };
      }),
    };
  }
  return asJson();
}

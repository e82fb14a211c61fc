import { shownText } from "./format.ts";

/** How the cockpit shows a value: by what it is, not as one JSON text. Its texts are shown text (no bidirectional controls). */
export type OutputShape =
  | { kind: "nothing" }
  | { kind: "scalar"; text: string }
  | { kind: "text"; text: string }
  | { kind: "table"; table: TableShape }
  | { kind: "record"; fields: Array<{ name: string; shape: OutputShape }> }
  | { kind: "json"; value: unknown };

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
/** A string longer than this, or with a line break, reads better as a block than inline. */
const LONG_TEXT = 80;
const MAX_FIELDS = 50;

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** `text` cut at `max` characters, an ellipsis for what is left out. */
const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** A cell's text: scalars as they are, anything else as compact JSON, cut at MAX_CELL characters. */
function cellText(value: unknown): string {
  return cut(shownText(value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value) ?? ""), MAX_CELL);
}

/** What the tables of one value may still show (MAX_CELLS). */
interface CellBudget {
  cells: number;
}

/** A non-empty array whose every item is an object: a table, of as many rows as `budget` leaves (none left: not a table). */
function tableOf(items: unknown[], budget: CellBudget): TableShape | null {
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
  const shown = Math.min(MAX_ROWS, items.length, Math.floor(budget.cells / Math.max(1, keys.length)));
  if (shown === 0) return null;
  budget.cells -= shown * Math.max(1, keys.length);
  // A row's own members only: a row without a "__proto__" column's member read Object.prototype (`{}`).
  const rows = items.slice(0, shown).map((item) => keys.map((key) => cellText(Object.hasOwn(item as object, key) ? (item as Record<string, unknown>)[key] : undefined)));
  const names = keys.map(shownText);
  return { columns: names.map((name) => cut(name, MAX_CELL)), labels: names.map((name) => cut(name, MAX_LABEL)), rows, more: items.length - shown, moreColumns: seen.length - keys.length };
}

/**
 * The shape a value is shown in: an array of objects is a table, a long string a text block, a
 * scalar itself, an object one level of named parts (each by its own shape), anything else JSON.
 */
export function outputShape(value: unknown, depth = 0, budget: CellBudget = { cells: MAX_CELLS }): OutputShape {
  if (value === undefined || value === null) return { kind: "nothing" };
  if (typeof value === "string") return value.length > LONG_TEXT || value.includes("\n") ? { kind: "text", text: shownText(value) } : { kind: "scalar", text: shownText(value) };
  if (typeof value === "number" || typeof value === "boolean") return { kind: "scalar", text: String(value) };
  if (Array.isArray(value)) {
    const table = tableOf(value, budget);
    return table ? { kind: "table", table } : { kind: "json", value };
  }
  if (isPlainObject(value) && depth === 0) {
    const entries = Object.entries(value);
    if (entries.length === 0 || entries.length > MAX_FIELDS) return { kind: "json", value };
    return { kind: "record", fields: entries.map(([name, field]) => ({ name: shownText(name), shape: outputShape(field, depth + 1, budget) })) };
  }
  return { kind: "json", value };
}

/**
 * How a generated form names its controls, and an index of a submitted form by those names.
 *
 * A control is named by its path from `input`, one segment per property or row index, joined by
 * dots (`input.owner.name`, `input.rows.2.path`). A property name is one segment whatever it
 * holds: `~` is written `~0` and `.` `~1` (as JSON Pointer escapes `~` and `/`), so the property
 * `"a.b"` is `input.a~1b` and never the control of `b` inside `a` (`input.a.b`). A row's index
 * stands as {@link ROW_INDEX} in the controls of its template, so a name beginning with it has
 * that first `_` written `~2` (`__row__` → `~2_row__`). Ordinary names are written as they are.
 */

/** Stands for a row's index in the controls of a `rows` or `record` field's fields (`input.items.__row__.name`). */
export const ROW_INDEX = "__row__";

/** One property name as one segment of a control name (`a.b` → `a~1b`, `x~y` → `x~0y`, `__row__` → `~2_row__`). */
export function nameSegment(name: string): string {
  const escaped = name.includes("~") || name.includes(".") ? name.replace(/~/g, "~0").replace(/\./g, "~1") : name;
  // A property named `__row__` was taken for a row's index, and its box refused as no field (cockpit tester, session 50).
  return escaped.startsWith(ROW_INDEX) ? `~2${escaped.slice(1)}` : escaped;
}

/** The control of property `name` under `parent`: `input` + `owner` → `input.owner`. */
export const childControl = (parent: string, name: string): string => `${parent}.${nameSegment(name)}`;

/** Whether `text[from, to)` is a row index as a form writes it: decimal, no sign, no leading zero (`07` names no row). */
function isIndex(text: string, from: number, to: number): boolean {
  if (to <= from || (text.charCodeAt(from) === 48 && to - from > 1)) return false;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return false;
  }
  return true;
}

/**
 * How many segments of a submitted name are indexed for their rows: deeper than any control a form
 * generates (fieldsets nest three levels), so a hostile name of a million dots costs no more than
 * its length.
 */
const MAX_SEGMENTS = 32;

/**
 * A submitted form, read once into maps: the values of each name, and the row indexes under each
 * prefix. URLSearchParams finds a name by walking every entry; a form of thousands of rows looks
 * up each of their controls, which must not cost the square of its size.
 */
export class PostedForm {
  readonly #values = new Map<string, string[]>();
  readonly #rows = new Map<string, Set<number>>();
  /** The names sent under each row (`input.rows.12` → every `input.rows.12.…` name), nested rows' names included. */
  readonly #underRow = new Map<string, string[]>();

  constructor(form: URLSearchParams) {
    for (const [name, value] of form) {
      const values = this.#values.get(name);
      if (values) values.push(value);
      else this.#values.set(name, [value]);
    }
    for (const name of this.#values.keys()) this.#indexRows(name);
  }

  /**
   * `input.rows.12.path` → 12 under `input.rows` (and so on for every index segment). Read with
   * slices of the name, not its split and joined prefixes: a form of 100,000 rows is 200,000
   * names, read on the server's thread (checking tester, session 46).
   */
  #indexRows(name: string): void {
    let dot = name.indexOf(".");
    for (let segments = 1; dot >= 0 && segments < MAX_SEGMENTS; segments++) {
      const next = name.indexOf(".", dot + 1);
      const end = next < 0 ? name.length : next;
      if (isIndex(name, dot + 1, end)) {
        const index = Number(name.slice(dot + 1, end));
        if (Number.isSafeInteger(index)) {
          const prefix = name.slice(0, dot);
          const seen = this.#rows.get(prefix);
          if (seen) seen.add(index);
          else this.#rows.set(prefix, new Set([index]));
          const row = name.slice(0, end);
          const under = this.#underRow.get(row);
          if (under) under.push(name);
          else this.#underRow.set(row, [name]);
        }
      }
      dot = next;
    }
  }

  /** The first value sent under `name`, or null. */
  get(name: string): string | null {
    return this.#values.get(name)?.[0] ?? null;
  }

  /** Every value sent under `name`, in order. */
  getAll(name: string): string[] {
    return this.#values.get(name) ?? [];
  }

  has(name: string): boolean {
    return this.#values.has(name);
  }

  /** Every name sent, once each. */
  names(): IterableIterator<string> {
    return this.#values.keys();
  }

  /** Every name sent under one row of a rows or record control (`input.rows`, 3 → `input.rows.3.path`, …). */
  namesUnderRow(control: string, index: number): string[] {
    return this.#underRow.get(`${control}.${index}`) ?? [];
  }

  /** The row indexes sent under a rows or record control (`input.rows.3.path` → 3), ascending. */
  rowIndexes(control: string): number[] {
    return [...(this.#rows.get(control) ?? [])].sort((a, b) => a - b);
  }
}

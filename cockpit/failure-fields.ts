import type { FailureDescriptor } from "../runtime/execution/failure.ts";
import { rowFields, type FieldSpec, type FormShape } from "./form-fields.ts";
import { filledRows, RAW_JSON_CONTROL } from "./form-input.ts";
import { PostedForm } from "./form-names.ts";

/**
 * The problems of a failed call or start, by the form control they are about, so that the page
 * shows each at its field as it shows a problem of reading the form (docs/cockpit.md): the
 * schema's problems (`context.problems`, at paths like `input.rows[0].size`) at the deepest field
 * the path reaches, and a failure that names a field (`context.field`, or the fields of
 * `context.fields`) at that field. With the raw
 * JSON box filled, the fields were not what was sent: the problems are shown at that box.
 */
export function fieldErrorsOf(failure: FailureDescriptor, shape: FormShape, submitted: URLSearchParams): Record<string, string> {
  const form = new PostedForm(submitted);
  const context = (failure.context ?? {}) as { problems?: unknown; field?: unknown; fields?: unknown };
  const problems = Array.isArray(context.problems) ? context.problems.filter(isProblem) : [];
  // Fields a write may not lose (`unknown_fields`: a record's key "constructor"), as dotted paths.
  const named = Array.isArray(context.fields) ? context.fields.filter((field): field is string => typeof field === "string") : [];
  if ((form.get(RAW_JSON_CONTROL) ?? "").trim() !== "") return problems.length > 0 || typeof context.field === "string" || named.length > 0 ? { [RAW_JSON_CONTROL]: failure.message } : {};
  if (shape === null) return {};
  const errors: Record<string, string> = {};
  const add = (control: string | null, text: string) => {
    if (control !== null) errors[control] = errors[control] ? `${errors[control]} ${text}` : text;
  };
  for (const problem of problems) {
    const keys = keysOf(problem.path);
    if (keys !== null) add(controlOf(shape, keys, form), `${problem.path.replace(/^input\.?/, "") || "input"}: ${problem.message}`);
  }
  if (problems.length === 0 && typeof context.field === "string") add(controlOf(shape, [context.field], form), failure.message);
  for (const path of problems.length === 0 ? named : []) add(controlOf(shape, path.split(".").map((key) => (/^\d+$/.test(key) ? Number(key) : key)), form), failure.message);
  return errors;
}

const isProblem = (value: unknown): value is { path: string; message: string } =>
  typeof value === "object" && value !== null && typeof (value as { path?: unknown }).path === "string" && typeof (value as { message?: unknown }).message === "string";

/**
 * The keys of a problem's path as the input check writes it (runtime/execution/validate.ts):
 * `input`, then `.name`, `[3]` or `["a.b"]` for each step; null for anything else.
 */
function keysOf(path: string): Array<string | number> | null {
  if (!path.startsWith("input")) return null;
  const step = /\.([A-Za-z_$][\w$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/y;
  const keys: Array<string | number> = [];
  for (let at = "input".length; at < path.length; at = step.lastIndex) {
    step.lastIndex = at;
    const found = step.exec(path);
    if (!found) return null;
    keys.push(found[1] ?? (found[2] !== undefined ? Number(found[2]) : (JSON.parse(found[3]!) as string)));
  }
  return keys;
}

/**
 * The control of the deepest field the keys lead to: through an object's fields, a row (by the
 * input's index, among the rows that were items) and the chosen shape of a union. A list, a
 * record or a JSON box is marked as a whole. Null when the first key names no field.
 */
function controlOf(shape: FieldSpec[], keys: Array<string | number>, form: PostedForm): string | null {
  let fields = shape;
  let control: string | null = null;
  for (let i = 0; i < keys.length; i++) {
    const field = fields.find((f) => f.name === keys[i]);
    if (field === undefined) break;
    control = field.control;
    if (field.kind === "object") fields = field.fields;
    else if (field.kind === "variant") {
      const choice = form.get(`${field.control}.variant`) ?? "";
      const chosen = /^\d+$/.test(choice) ? field.variants[Number(choice)] : undefined;
      if (chosen === undefined) break;
      fields = chosen.fields;
    } else if (field.kind === "rows" && typeof keys[i + 1] === "number") {
      const row = filledRows(field, form)[keys[i + 1] as number];
      if (row === undefined) break;
      fields = rowFields(field.fields, row, field.control);
      i++;
    } else break;
  }
  return control;
}

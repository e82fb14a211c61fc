import { ROW_INDEX, rowFields, type FieldSpec, type FormShape, type Scalar } from "./form-fields.ts";
import { PostedForm } from "./form-names.ts";
import { impossibleDateTime, withServerZone } from "./local-time.ts";

/** The form control that holds the whole input as JSON; when not empty it replaces the fields. */
export const RAW_JSON_CONTROL = "raw_json";

/** What reading a submitted form gives: the input, or one message per field that could not be read. */
export type FormReading = { ok: true; input: unknown } | { ok: false; errors: Record<string, string>; message: string };

/** An option's value in the markup: its JSON, so that `"1"` and `1` (and null) stay apart. */
export const optionValue = (option: Scalar): string => JSON.stringify(option);

const quote = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);

/** What a problem says about the value typed: quoted, unless the field is or holds a secret (docs/security.md). */
const shown = (field: FieldSpec, text: string) => (field.sensitive ? "a value that is not shown (the field holds a secret)" : quote(text));

type Read = { value: unknown } | { omit: true } | { error: string };

/** Sets a member as its own, whatever its name: `obj["__proto__"] = v` would set the prototype and lose the value. */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * A number as a form's number box submits it (HTML's "valid floating-point number": `-1.5`,
 * `.5`, `1e3`): never what `Number()` alone would also take (`0x10`, `0b1`, `Infinity`, `+5`),
 * which the API reads as no number either.
 */
const FORM_NUMBER = /^-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function readNumber(field: FieldSpec, text: string, integer: boolean, what = field.name): Read {
  const trimmed = text.trim();
  const value = FORM_NUMBER.test(trimmed) ? Number(trimmed) : NaN;
  if (!Number.isFinite(value)) return { error: `${what} must be a number, got ${shown(field, text)}.` };
  if (integer && !Number.isInteger(value)) return { error: `${what} must be a whole number, got ${shown(field, text)}.` };
  return { value };
}

/** An empty control: absent when optional, null when nullable, else "required". */
/** A date or date-time of the right shape that names no day or time of the calendar, said with the field's name; null when it names one. */
function impossible(field: FieldSpec, text: string): Read | null {
  const why = impossibleDateTime(text);
  return why === null ? null : { error: `${field.name}: ${quote(text)} is no ${field.kind === "date" ? "day" : "date and time"} of the calendar: ${why}.` };
}

function empty(field: FieldSpec): Read {
  if (!field.required) return { omit: true };
  if (field.nullable) return { value: null };
  return { error: `${field.name} is required.` };
}

/**
 * An empty group (no box ticked, no line, no row, no entry): absent when optional, null when
 * nullable — as an empty control is, so "left empty, it is sent as null" holds for every kind —
 * else the empty value itself (`[]`, `{}`).
 */
function emptyGroup(field: FieldSpec, value: unknown[] | Record<string, never>): Read {
  if (!field.required) return { omit: true };
  return { value: field.nullable ? null : value };
}

/** The kinds whose control a form sends once: sent more often (a hand-made post), which value is meant cannot be told. */
const SENT_ONCE = new Set<FieldSpec["kind"]>(["text", "password", "number", "integer", "boolean", "choice", "list", "date", "datetime", "timestamp", "json"]);

function readField(field: FieldSpec, form: PostedForm, errors: Errors): Read {
  // As the API refuses a repeated parameter, rather than one of its values silently winning (contract tester, session 39).
  const sent = SENT_ONCE.has(field.kind) ? form.getAll(field.control).length : 0;
  if (sent > 1) return { error: `${field.name} was sent ${sent} times; it takes one value.` };
  const text = form.get(field.control) ?? "";
  switch (field.kind) {
    case "text":
    case "password":
      return text === "" ? empty(field) : { value: text };
    case "number":
    case "integer":
      return text.trim() === "" ? empty(field) : readNumber(field, text, field.kind === "integer");
    case "boolean":
      // An unchecked box is not sent: false when the value must be there or would default to true.
      if (form.has(field.control)) return { value: true };
      return field.required || field.default === true ? { value: false } : { omit: true };
    case "choice": {
      if (text === "") return empty(field);
      const found = field.options.find((option) => optionValue(option) === text);
      return found === undefined ? { error: `${field.name} must be one of ${field.options.map((o) => JSON.stringify(o)).join(", ")}, got ${shown(field, text)}.` } : { value: found };
    }
    case "choices": {
      const chosen = form.getAll(field.control).filter((v) => v !== "");
      if (chosen.length === 0) return emptyGroup(field, []);
      const values: Scalar[] = [];
      for (const text of chosen) {
        const found = field.options.find((option) => optionValue(option) === text);
        if (found === undefined) return { error: `${field.name} must hold only ${field.options.map((o) => JSON.stringify(o)).join(", ")}, got ${shown(field, text)}.` };
        values.push(found);
      }
      return { value: values };
    }
    case "list": {
      const lines = text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "");
      if (lines.length === 0) return emptyGroup(field, []);
      if (field.item === "string") return { value: lines };
      const values: number[] = [];
      for (const [i, line] of lines.entries()) {
        const read = readNumber(field, line, field.item === "integer", `${field.name} (line ${i + 1})`);
        if ("error" in read) return read;
        if ("value" in read) values.push(read.value as number);
      }
      return { value: values };
    }
    case "date":
      if (text === "") return empty(field);
      if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return { error: `${field.name} must be a date (yyyy-mm-dd), got ${quote(text)}.` };
      return impossible(field, text) ?? { value: text };
    case "datetime":
      if (text === "") return empty(field);
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(text)) return { error: `${field.name} must be a date and time (yyyy-mm-ddThh:mm), got ${quote(text)}.` };
      return impossible(field, text) ?? { value: text };
    case "timestamp": {
      // The box sends a wall time with no zone; the cockpit is local, so it is the server's (docs/cockpit.md).
      if (text === "") return empty(field);
      const unreal = impossible(field, text.trim());
      if (unreal !== null) return unreal;
      const zoned = withServerZone(text.trim());
      if (zoned === null) return { error: `${field.name} must be a date and time (yyyy-mm-ddThh:mm, seconds and a zone optional), got ${quote(text)}.` };
      if (zoned.kind === "skipped") {
        return {
          error:
            `${field.name}: ${quote(text)} does not exist in the server's time zone (${zoned.zone}): its clocks skip that time, going from UTC${zoned.before} to UTC${zoned.after}. ` +
            "Pick a time outside the skipped hour, or send the moment with its UTC offset through the raw JSON box.",
        };
      }
      if (zoned.kind === "repeated") {
        return {
          error:
            `${field.name}: ${quote(text)} happens twice in the server's time zone (${zoned.zone}), whose clocks go back over it. ` +
            `Send the moment with its offset through the raw JSON box: ${zoned.earlier} for the first, ${zoned.later} for the second.`,
        };
      }
      return { value: zoned.value };
    }
    case "object":
      return readObject(field, field.fields, form, errors);
    case "rows":
      return readRows(field, form, errors);
    case "record":
      return readRecord(field, form, errors);
    case "variant":
      return readVariant(field, form, errors);
    case "json": {
      if (text.trim() === "") return empty(field);
      try {
        return { value: JSON.parse(text) };
      } catch (error) {
        // The parser quotes the text it stumbled on: never for a field that holds a secret.
        return { error: field.sensitive ? `${field.name} is not valid JSON.` : `${field.name} is not valid JSON: ${(error as Error).message}` };
      }
    }
  }
}

/** The input's controls a form of `shape` may send, row indexes as `__row__`, a variant's chooser too. */
function controlPatterns(fields: FieldSpec[], into: string[] = []): string[] {
  for (const field of fields) {
    into.push(field.control);
    if (field.kind === "variant") {
      into.push(`${field.control}.variant`);
      for (const variant of field.variants) controlPatterns(variant.fields, into);
    }
    controlPatterns(field.fields, into);
  }
  return into;
}

/**
 * The names sent under `input.` that no control of `shape` has: a row index is as a form writes it
 * (`0`, `12`) and a safe integer, as PostedForm reads rows (one past 2^53 was no stray, and its row
 * was dropped; checking tester, session 41).
 */
function strayControls(shape: FieldSpec[], form: PostedForm): string[] {
  const patterns = controlPatterns(shape).map((control) => control.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll(`\\.${ROW_INDEX}`, "\\.(0|[1-9]\\d*)"));
  const known = new RegExp(`^(?:${patterns.join("|")})$`);
  const strays: string[] = [];
  for (const name of form.names()) {
    if (!name.startsWith("input.")) continue;
    const match = known.exec(name);
    if (match === null || match.some((index, i) => i > 0 && index !== undefined && !Number.isSafeInteger(Number(index)))) strays.push(name);
  }
  return strays;
}

/** Problems by control: a nested read records its fields' problems here, and says its own. */
type Errors = Record<string, string>;

/** Reads fields into an object; every problem is recorded under its own control. */
function readFields(fields: FieldSpec[], form: PostedForm, errors: Errors): { value: Record<string, unknown>; failed: boolean } {
  const value: Record<string, unknown> = {};
  let failed = false;
  for (const child of fields) {
    const read = readField(child, form, errors);
    if ("error" in read) {
      errors[child.control] = read.error;
      failed = true;
    } else if ("value" in read) put(value, child.name, read.value);
  }
  return { value, failed };
}

/**
 * Whether any control of this field (or of its fields, in every row and every shape) holds
 * something. A variant's chooser alone is not something: the shape's fields are. Read from the
 * fields, not from name prefixes, so a property that happens to be called `variant` counts.
 */
function isFilled(field: FieldSpec, form: PostedForm): boolean {
  switch (field.kind) {
    case "object":
      return field.fields.some((child) => isFilled(child, form));
    case "variant":
      return field.variants.some((variant) => variant.fields.some((child) => isFilled(child, form)));
    case "rows":
    case "record":
      return form.rowIndexes(field.control).some((index) => rowFields(field.fields, index, field.control).some((child) => isFilled(child, form)));
    default:
      return form.getAll(field.control).some((text) => text !== "");
  }
}

function readObject(field: FieldSpec, fields: FieldSpec[], form: PostedForm, errors: Errors): Read {
  // A group with nothing filled in is absent when optional, null when nullable; a required one
  // is read, so that its required fields are named.
  if ((!field.required || field.nullable) && !isFilled(field, form)) return empty(field);
  const read = readFields(fields, form, errors);
  return read.failed ? { error: `${field.name} has problems in its fields.` } : { value: read.value };
}

/**
 * The indexes of a rows field's rows that are items, in order: a row left empty (the spare one the
 * page always offers) is no item, so the input's `rows[k]` is the form's row `filledRows(…)[k]`.
 */
export function filledRows(field: FieldSpec, form: PostedForm): number[] {
  return form.rowIndexes(field.control).filter((index) => rowFields(field.fields, index, field.control).some((f) => isFilled(f, form)));
}

function readRows(field: FieldSpec, form: PostedForm, errors: Errors): Read {
  const items: unknown[] = [];
  const failed: number[] = [];
  for (const index of filledRows(field, form)) {
    const fields = rowFields(field.fields, index, field.control);
    const read = readFields(fields, form, errors);
    if (read.failed) failed.push(index + 1);
    else items.push(read.value);
  }
  if (failed.length > 0) {
    const which = failed.length === 1 ? `row ${failed[0]}` : `rows ${failed.slice(0, 5).join(", ")}${failed.length > 5 ? ` and ${failed.length - 5} more` : ""}`;
    return { error: `${field.name} has problems in ${which}.` };
  }
  if (items.length === 0) return emptyGroup(field, []);
  return { value: items };
}

function readRecord(field: FieldSpec, form: PostedForm, errors: Errors): Read {
  const record: Record<string, unknown> = {};
  for (const index of form.rowIndexes(field.control)) {
    const [keyField, valueField] = rowFields(field.fields, index, field.control) as [FieldSpec, FieldSpec];
    const key = (form.get(keyField.control) ?? "").trim();
    if (key === "" && !isFilled(valueField, form)) continue;
    if (key === "") return { error: `${field.name} has a value without a key (row ${index + 1}).` };
    if (Object.hasOwn(record, key)) return { error: `${field.name} has the key ${quote(key)} twice.` };
    const value = readField(valueField, form, errors);
    if ("error" in value) return { error: `${field.name}[${quote(key)}]: ${value.error}` };
    put(record, key, "value" in value ? value.value : null);
  }
  if (Object.keys(record).length === 0) return emptyGroup(field, {});
  return { value: record };
}

function readVariant(field: FieldSpec, form: PostedForm, errors: Errors): Read {
  const chosen = form.get(`${field.control}.variant`) ?? "";
  if (chosen === "") return field.required && !field.nullable ? { error: `${field.name}: choose one of ${field.variants.map((v) => v.label).join(", ")}.` } : empty(field);
  const variant = field.variants[Number(chosen)];
  if (!variant || !/^\d+$/.test(chosen)) return { error: `${field.name}: no shape ${quote(chosen)}; choose one of ${field.variants.map((v) => v.label).join(", ")}.` };
  const read = readFields(variant.fields, form, errors);
  if (read.failed) return { error: `${field.name} (${variant.label}) has problems in its fields.` };
  return { value: variant.constant ? { [variant.constant.name]: variant.constant.value, ...read.value } : read.value };
}

/**
 * Reads the input a generated form submitted. Each control is read by its field's kind; the raw
 * JSON control, when filled, is the whole input instead. Problems are reported per field, in
 * sentences that name the field and the value; the schema itself is checked by the plane after.
 */
export function inputFromForm(shape: FormShape, submitted: URLSearchParams, options: { secrets?: boolean; rootType?: unknown } = {}): FormReading {
  const form = new PostedForm(submitted);
  const raw = (form.get(RAW_JSON_CONTROL) ?? "").trim();
  if (raw !== "") {
    try {
      return { ok: true, input: JSON.parse(raw) };
    } catch (error) {
      // The parser's message quotes the text it stumbled on, which may be a secret.
      const message = options.secrets
        ? "The raw JSON input is not valid JSON (the parser's detail is not shown: this input holds secrets). Check quotes, commas and brackets."
        : `The raw JSON input is not valid JSON: ${(error as Error).message}`;
      return { ok: false, errors: { [RAW_JSON_CONTROL]: message }, message };
    }
  }
  if (shape === null) {
    // An input that is no object (a string, a list) has no fields: an empty box is no input, not
    // an empty object to be told "Expected string but received Object" about (MCP tester, session 41).
    if (typeof options.rootType === "string" && options.rootType !== "object") {
      const example = options.rootType === "string" ? " (a string in quotes)" : options.rootType === "array" ? " (a list in brackets: [ … ])" : "";
      const message = `The input of this capability is ${options.rootType === "array" || options.rootType === "integer" ? "an" : "a"} ${options.rootType}, not an object: write it as JSON in the raw JSON box${example}, then run it again.`;
      return { ok: false, errors: { [RAW_JSON_CONTROL]: message }, message };
    }
    return { ok: true, input: {} };
  }
  // A control no field of the input has: the page was made for an earlier version of the file (a
  // field renamed while it was open), or the form was changed. Read by the fields alone, the call
  // ran without what was typed there — a write too, which the API refuses (MCP tester, session 41).
  const strays = strayControls(shape, form);
  if (strays.length > 0) {
    const named = strays.slice(0, 3).map(quote).join(", ") + (strays.length > 3 ? ` and ${strays.length - 3} more` : "");
    const message = `The form sent ${named}, which ${strays.length === 1 ? "is no field" : "are no fields"} of this capability's input as it is now: the page was made before its file changed, or the form was altered. Nothing ran. Fill in the form below (made for the capability as it is now) and run it again.`;
    return { ok: false, errors: {}, message };
  }
  const input: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of shape) {
    const read = readField(field, form, errors);
    if ("error" in read) errors[field.control] = read.error;
    else if ("value" in read) put(input, field.name, read.value);
  }
  const problems = Object.values(errors);
  if (problems.length > 0) return { ok: false, errors, message: problems.length === 1 ? problems[0]! : `The input has ${problems.length} problems: ${problems.join(" ")}` };
  return { ok: true, input };
}

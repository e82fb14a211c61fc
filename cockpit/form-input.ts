import type { FieldSpec, FormShape, Scalar } from "./form-fields.ts";

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

function readNumber(field: FieldSpec, text: string, integer: boolean, what = field.name): Read {
  const trimmed = text.trim();
  const value = trimmed === "" ? NaN : Number(trimmed);
  if (!Number.isFinite(value)) return { error: `${what} must be a number, got ${shown(field, text)}.` };
  if (integer && !Number.isInteger(value)) return { error: `${what} must be a whole number, got ${shown(field, text)}.` };
  return { value };
}

/** An empty control: absent when optional, null when nullable, else "required". */
function empty(field: FieldSpec): Read {
  if (!field.required) return { omit: true };
  if (field.nullable) return { value: null };
  return { error: `${field.name} is required.` };
}

function readField(field: FieldSpec, form: URLSearchParams): Read {
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
      if (chosen.length === 0) return field.required ? { value: [] } : { omit: true };
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
      if (lines.length === 0) return field.required ? { value: [] } : { omit: true };
      if (field.item === "string") return { value: lines };
      const values: number[] = [];
      for (const [i, line] of lines.entries()) {
        const read = readNumber(field, line, field.item === "integer", `${field.name} (line ${i + 1})`);
        if ("error" in read) return read;
        if ("value" in read) values.push(read.value as number);
      }
      return { value: values };
    }
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

/**
 * Reads the input a generated form submitted. Each control is read by its field's kind; the raw
 * JSON control, when filled, is the whole input instead. Problems are reported per field, in
 * sentences that name the field and the value; the schema itself is checked by the plane after.
 */
export function inputFromForm(shape: FormShape, form: URLSearchParams, options: { secrets?: boolean } = {}): FormReading {
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
  if (shape === null) return { ok: true, input: {} };
  const input: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of shape) {
    const read = readField(field, form);
    if ("error" in read) errors[field.control] = read.error;
    else if ("value" in read) input[field.name] = read.value;
  }
  const problems = Object.values(errors);
  if (problems.length > 0) return { ok: false, errors, message: problems.length === 1 ? problems[0]! : `The input has ${problems.length} problems: ${problems.join(" ")}` };
  return { ok: true, input };
}

import type { RegisteredCapability } from "../runtime/capability/registered.ts";
import { isExecutionId } from "../runtime/execution/execution-id.ts";
import { holdsSensitive, REDACTED } from "../runtime/execution/redaction.ts";
import type { ExecutionStore } from "../runtime/store/store.ts";
import { formShape, rowFields, type FieldSpec } from "./form-fields.ts";
import { optionValue, RAW_JSON_CONTROL } from "./form-input.ts";
import { TYPE_AGAIN_CONTROL } from "./json-schema-form.tsx";
import { toServerWallTime, withServerZone } from "./local-time.ts";
import type { ProblemProps } from "./pages/problem.tsx";

/** What `?again=<id>` on a capability page gives: nothing asked, a filled form, or a problem page. */
export type AgainValues =
  | { kind: "none" }
  | { kind: "filled"; values: URLSearchParams; notice: string }
  | { kind: "refused"; problem: Omit<ProblemProps, "root"> };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** What the form could not hold of a stored input, by path (`old_name`, `owner.nick`, `rows.0.b`), and the secrets it held. */
interface Unheld {
  /** Members no field of the form is for: renamed or removed since. */
  dropped: string[];
  /** Members whose field cannot hold the value as it was (its type or choices changed since): left empty. */
  changed: string[];
  /**
   * Members the schema still takes but whose control cannot show them as they are (a list item
   * with spaces at either end, an empty one or one with a line break; a line break in a one-line
   * box): left empty, since sent as shown they would come back changed.
   */
  unfit: string[];
  /** Why the controls cannot show those: each reason once. */
  unfitBecause: Set<Unfit>;
  /** Fields that are or hold a secret which the input was given: only "[redacted]" was stored. */
  secrets: string[];
}

/** Why a control cannot show a value its field still takes, in the words of the notice. */
const UNFIT = {
  list: "a list takes one value per line, each trimmed, none empty",
  line: "a one-line box takes no line break",
  repeated: "a date-and-time box holds the server's wall time, which its clocks show twice for that moment (they go back over it)",
  unticked: "an optional box left unticked sends no value, not false",
  time: "a date-and-time box holds a time to the millisecond, with a zone",
  key: "a key's box is trimmed and takes no empty key",
  row: "a row with every box empty is left out",
  empty: "an empty box, list or group sends no value, not an empty one",
  year: "a date box takes no date before year 1",
} as const;
type Unfit = keyof typeof UNFIT;

/** How a field's control takes a stored value: as it was, not at all (the field changed), or not as it is (the control cannot show it, and why). */
type Fit = "fits" | "changed" | Unfit;

/** A string a one-line box or a list's line shows as it is: a line break would be lost or split it. */
const isOneLine = (text: string) => !/[\r\n]/.test(text);

const isScalarOption = (field: FieldSpec, value: unknown) => field.options.some((option) => option === value);

/**
 * Whether a field's control shows a stored scalar (or list) as it was, so that sending the form
 * sends it again. An empty value is shown as the empty control: null where the field may be null.
 */
function fitsControl(field: FieldSpec, value: unknown): Fit {
  const fits = (yes: boolean): Fit => (yes ? "fits" : "changed");
  if (value === null) return fits(field.nullable || (field.kind === "choice" && isScalarOption(field, null)) || field.kind === "json");
  // An empty box is no value (form-input.ts empty): "" came back absent, null or its default (cockpit checking tester, session 48).
  if (value === "" && (field.kind === "text" || field.kind === "date" || field.kind === "datetime" || field.kind === "timestamp")) return "empty";
  switch (field.kind) {
    case "text":
      if (typeof value !== "string") return "changed";
      return isOneLine(value) ? "fits" : "line";
    case "timestamp": {
      if (typeof value !== "string") return "changed";
      // A value the box cannot show as a wall time (finer than milliseconds, or with no zone) is
      // put in as it is, which the browser's box refuses and sends empty: the field was dropped
      // from the input that Run again sent (cockpit tester, session 48).
      const wall = toServerWallTime(value);
      // Before year 1 the browser's box takes no date (year 0000 was sent empty).
      if (wall === value || !/^\d{4}-/.test(wall) || wall.startsWith("0000-")) return "time";
      // Shown as the server's wall time: one its clocks show twice sends back only one of the two moments.
      return withServerZone(wall)?.kind === "repeated" ? "repeated" : "fits";
    }
    case "password":
      return fits(typeof value === "string");
    case "date":
    case "datetime":
      if (typeof value !== "string") return "changed";
      // The browser's box refuses year 0000, and sends the field empty (cockpit checking tester, session 48).
      return /^(?:0000|-)/.test(value) ? "year" : "fits";
    case "number":
      return fits(typeof value === "number" && Number.isFinite(value));
    case "integer":
      return fits(Number.isInteger(value));
    case "boolean":
      if (typeof value !== "boolean") return "changed";
      // Unticked, an optional box is left out of the input (form-input.ts): false would come back absent (checking tester, session 46).
      return value === false && !field.required && field.default !== true ? "unticked" : "fits";
    case "choice":
      return fits(isScalarOption(field, value));
    case "choices":
      if (Array.isArray(value) && value.length === 0 && sentAsNothing(field)) return "empty";
      return fits(Array.isArray(value) && value.every((item) => isScalarOption(field, item)));
    case "list":
      if (!Array.isArray(value)) return "changed";
      if (value.length === 0 && sentAsNothing(field)) return "empty";
      if (field.item !== "string") return fits(value.every((item) => (field.item === "integer" ? Number.isInteger(item) : typeof item === "number" && Number.isFinite(item))));
      if (!value.every((item) => typeof item === "string")) return "changed";
      // One value per line, each trimmed and none empty: a string that is not one line as typed would come back changed.
      return value.every((item) => item !== "" && item === item.trim() && isOneLine(item)) ? "fits" : "list";
    default:
      return "fits";
  }
}

/** Whether an empty group (no box ticked, no line, no row, nothing filled) is sent as no value, or null, rather than as itself (form-input.ts emptyGroup). */
const sentAsNothing = (field: FieldSpec) => !field.required || field.nullable;

/** Whether what `values` got from `before` on holds anything filled in: a variant's chooser alone is nothing (form-input.ts isFilled). */
function filledSince(values: URLSearchParams, before: number): boolean {
  return [...values.entries()].slice(before).some(([name, text]) => text !== "" && !name.endsWith(".variant"));
}

/** The members of `value` that none of `fields` is for (a constant a shape sets is one of its own), as paths under `prefix`. */
function droppedMembers(fields: FieldSpec[], value: Record<string, unknown>, prefix: string, own: string | null = null): string[] {
  return Object.keys(value)
    .filter((key) => key !== own && !fields.some((f) => f.name === key))
    .map((key) => prefix + key);
}

/**
 * Appends what a field's controls would have sent for a stored value at `path`, and records in
 * `unheld` what they cannot hold as it was (left empty then: the raw JSON box has it). A secret
 * is never filled back in, and is not "unheld": it is typed again.
 */
function appendValues(values: URLSearchParams, field: FieldSpec, value: unknown, path: string, unheld: Unheld): void {
  if (value === undefined) return;
  const group = field.kind === "object" || field.kind === "rows" || field.kind === "record" || field.kind === "variant";
  // A field no longer marked sensitive still holds what was stored for it when it was: only
  // "[redacted]", which sent back would run as its value (cockpit tester, session 50). A group
  // that was the secret (a sensitive object, record or variant, a list of sensitive rows) holds
  // it in its own place, not in a field of its own: the whole group is typed again (checking tester).
  const wholeGroupSecret = group && (value === REDACTED || (field.kind === "rows" && Array.isArray(value) && value.some((item) => item === REDACTED)));
  if (field.sensitive || (!group && holdsRedacted(value)) || wholeGroupSecret) {
    if (value !== null) {
      unheld.secrets.push(path);
      values.append(TYPE_AGAIN_CONTROL, field.control);
    }
    return;
  }
  const put = (text: string) => values.append(field.control, text);
  if (value === null || !group) {
    const fit = fitsControl(field, value);
    if (fit === "changed") return void unheld.changed.push(path);
    if (fit !== "fits") {
      unheld.unfit.push(path);
      unheld.unfitBecause.add(fit);
      return;
    }
    // An empty control is null; a choice of null and a JSON box hold it as `null`.
    if (value === null && !(field.kind === "json" || (field.kind === "choice" && isScalarOption(field, null)))) return;
  }
  switch (field.kind) {
    case "boolean":
      if (value === true) put("true");
      return;
    case "choice":
      return put(optionValue(value as never));
    case "choices":
      for (const item of value as unknown[]) put(optionValue(item as never));
      return;
    case "list":
      return put((value as unknown[]).map(String).join("\n"));
    case "json":
      return put(JSON.stringify(value, null, 2));
    case "timestamp":
      // The date-and-time box holds no zone: the same moment, as the server's wall time.
      return put(toServerWallTime(value as string));
    case "object": {
      if (!isObject(value)) return void unheld.changed.push(path);
      unheld.dropped.push(...droppedMembers(field.fields, value, `${path}.`));
      const before = [...values.keys()].length;
      for (const child of field.fields) appendValues(values, child, value[child.name], `${path}.${child.name}`, unheld);
      // A group with nothing filled in is no value, or null, when it may be (form-input.ts readObject).
      if (sentAsNothing(field) && !filledSince(values, before)) {
        unheld.unfit.push(path);
        unheld.unfitBecause.add("empty");
      }
      return;
    }
    case "rows":
      if (!Array.isArray(value)) return void unheld.changed.push(path);
      if (value.length === 0 && sentAsNothing(field)) {
        unheld.unfit.push(path);
        unheld.unfitBecause.add("empty");
        return;
      }
      value.forEach((item, index) => {
        if (!isObject(item)) return void unheld.changed.push(`${path}.${index}`);
        unheld.dropped.push(...droppedMembers(field.fields, item, `${path}.${index}.`));
        const before = [...values.keys()].length;
        for (const child of rowFields(field.fields, index, field.control)) appendValues(values, child, item[child.name], `${path}.${index}.${child.name}`, unheld);
        // A row whose every box is empty is no item (form-input.ts filledRows): `{ k: "" }` was
        // dropped from the input sent again, and the rows after it moved up (cockpit tester, session 48).
        if (!filledSince(values, before)) {
          unheld.unfit.push(`${path}.${index}`);
          unheld.unfitBecause.add("row");
        }
      });
      return;
    case "record":
      if (!isObject(value)) return void unheld.changed.push(path);
      if (Object.keys(value).length === 0 && sentAsNothing(field)) {
        unheld.unfit.push(path);
        unheld.unfitBecause.add("empty");
        return;
      }
      Object.entries(value).forEach(([key, item], index) => {
        // A key with spaces at either end, or none, comes back trimmed or refused (form-input.ts readRecord).
        if (key === "" || key !== key.trim()) {
          unheld.unfit.push(`${path}[${JSON.stringify(key)}]`);
          unheld.unfitBecause.add("key");
          return;
        }
        const [keyField, valueField] = rowFields(field.fields, index, field.control) as [FieldSpec, FieldSpec];
        appendValues(values, keyField, key, `${path}.${key}`, unheld);
        appendValues(values, valueField, item, `${path}.${key}`, unheld);
      });
      return;
    case "variant": {
      const k = isObject(value) ? field.variants.findIndex((v) => (v.constant ? value[v.constant.name] === v.constant.value : v.fields.every((f) => !f.required || f.name in value))) : -1;
      if (k < 0 || !isObject(value)) return void unheld.changed.push(path);
      const variant = field.variants[k]!;
      values.set(`${field.control}.variant`, String(k));
      unheld.dropped.push(...droppedMembers(variant.fields, value, `${path}.`, variant.constant?.name ?? null));
      for (const child of variant.fields) appendValues(values, child, value[child.name], `${path}.${child.name}`, unheld);
      return;
    }
    default:
      put(String(value));
  }
}

/**
 * Whether a stored value is or holds the text a secret was stored as: the field held a secret when
 * the execution ran, though the schema may no longer say so. A value typed as that very text is
 * asked for again too, which costs a retyping, where filling it back in could run a placeholder.
 */
function holdsRedacted(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (next === REDACTED) return true;
    if (typeof next === "object" && next !== null) pending.push(...Object.values(next));
  }
  return false;
}

/** What {@link formValuesOf} gives: the values, the secrets to type again, what the form could not hold. */
export interface RefilledForm {
  values: URLSearchParams;
  /** The fields holding a secret the input was given, by path: to type again. */
  secrets: string[];
  /** Members of the stored input the form has no field for (the schema changed since), by path. */
  unheld: string[];
  /** Members whose field cannot hold them as they were (the field's type or choices changed since), by path: left empty. */
  changed: string[];
  /** Members the schema still takes but whose control cannot show them as they are, by path: left empty. */
  unfit: string[];
  /** Why the controls cannot show those, as the notice says it. */
  unfitBecause: string[];
}

/**
 * The form values that send `input` again: every field as it was stored, except those that are or
 * hold a secret — the store only has "[redacted]" for them, so the person types them again. When
 * the form cannot hold all of the input as it was (a member with no field, a value its field
 * cannot hold, or one its control cannot show as it is), the whole input is also put in the raw
 * JSON box, unless the input was given a secret (that box is never filled back then: it would
 * send "[redacted]").
 */
export function formValuesOf(capability: RegisteredCapability, input: unknown): RefilledForm {
  const values = new URLSearchParams();
  const shape = formShape(capability.input_schema);
  if (shape === null) {
    // Raw JSON only: a stored secret cannot be filled back in, so such an input starts empty.
    const secret = holdsSensitive(input, capability.input_schema) || holdsRedacted(input);
    if (!secret) values.set(RAW_JSON_CONTROL, JSON.stringify(input ?? null, null, 2));
    return { values, secrets: secret ? ["the input"] : [], unheld: [], changed: [], unfit: [], unfitBecause: [] };
  }
  const unheld: Unheld = { dropped: [], changed: [], unfit: [], unfitBecause: new Set(), secrets: [] };
  if (isObject(input)) {
    unheld.dropped.push(...droppedMembers(shape, input, ""));
    for (const field of shape) appendValues(values, field, input[field.name], field.name, unheld);
  } else if (input !== undefined && input !== null) unheld.dropped.push("the whole input (it is not an object of fields)");
  if (unheld.dropped.length + unheld.changed.length + unheld.unfit.length > 0 && unheld.secrets.length === 0 && !holdsRedacted(input)) values.set(RAW_JSON_CONTROL, JSON.stringify(input, null, 2));
  return { values, secrets: unheld.secrets, unheld: unheld.dropped, changed: unheld.changed, unfit: unheld.unfit, unfitBecause: [...unheld.unfitBecause].map((why) => UNFIT[why]) };
}

/** Paths as a list for a sentence: the first ten, then how many more. */
const listed = (paths: string[]) => paths.slice(0, 10).join(", ") + (paths.length > 10 ? ` and ${paths.length - 10} more` : "");

/** "it was" or "they were", for `paths`. */
const asItWas = (paths: string[]) => (paths.length === 1 ? "it was" : "they were");

/** What the page says about the members the form could not hold, why, and where the old input is. */
function unheldNotice(form: RefilledForm, inRawBox: boolean): string {
  const { unheld: dropped, changed, unfit } = form;
  if (dropped.length + changed.length + unfit.length === 0) return "";
  let notice = "";
  const parts: string[] = [];
  if (dropped.length > 0) parts.push(`has no field for ${listed(dropped)}`);
  if (changed.length > 0) parts.push(`cannot hold ${listed(changed)} as ${asItWas(changed)} (left empty)`);
  if (parts.length > 0) notice += ` The form ${parts.join(", and ")}: the capability's input changed since.`;
  if (unfit.length > 0) {
    notice += ` The fields cannot show ${listed(unfit)} as ${asItWas(unfit)} (left empty): ${form.unfitBecause.join("; ")}.`;
  }
  const where = inRawBox
    ? " The whole input as it was is in the raw JSON box, which replaces the fields when sent: edit it now, or empty it to send the form."
    : "";
  return notice + where;
}

/** Reads `?again=<execution id>` for a capability page: the stored input of that execution, as form values. */
export function againValues(store: ExecutionStore, capability: RegisteredCapability, again: string | undefined): AgainValues {
  if (again === undefined || again === "") return { kind: "none" };
  if (!isExecutionId(again)) {
    return { kind: "refused", problem: { status: 400, title: "Not an execution id", message: `again must be an execution id (x-<yyyymmddThhmmssZ>-<8 hex>), got ${JSON.stringify(String(again).slice(0, 80))}.` } };
  }
  const execution = store.get(again);
  if (!execution) return { kind: "refused", problem: { status: 404, title: "No such execution", message: `This server knows no execution ${again} to run again.` } };
  if (execution.capability !== capability.id) {
    return { kind: "refused", problem: { status: 400, title: "Another capability", message: `${again} ran ${execution.capability}, not ${capability.id}.`, suggestion: "Use Run again on that execution's own page." } };
  }
  if (execution.details_expired) return { kind: "refused", problem: { status: 410, title: "Input no longer kept", message: `The details of ${again}, its input included, have expired.` } };
  const form = formValuesOf(capability, execution.input);
  const typeAgain = form.secrets.length ? ` Type ${listed(form.secrets)} again: secrets are never stored.` : "";
  const partial = form.unheld.length + form.changed.length + form.unfit.length > 0;
  const notice = unheldNotice(form, form.values.has(RAW_JSON_CONTROL) && formShape(capability.input_schema) !== null);
  return { kind: "filled", values: form.values, notice: `The form holds ${partial ? "what it can of " : ""}the input of ${again}.${notice}${typeAgain}` };
}

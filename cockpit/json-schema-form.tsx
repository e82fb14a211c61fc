/** @jsxImportSource hono/jsx */
import { callsDirectly, runsAsExecution, type RegisteredCapability } from "../runtime/capability/registered.ts";
import { formShape, ROW_INDEX, rowFields, type FieldSpec } from "./form-fields.ts";
import { mayHoldSecret } from "./raw-json-secret.ts";
import { optionValue, RAW_JSON_CONTROL } from "./form-input.ts";
import { PostedForm } from "./form-names.ts";
import { serverTimeZone, toServerWallTime } from "./local-time.ts";
import { formatJson } from "./format.ts";
import { raw } from "hono/html";

/** The control that marks a write as confirmed: set by run-form.js after `confirm()`, or ticked without JavaScript. */
export const CONFIRM_CONTROL = "confirmed";

/** The control carrying which button was pressed. */
export const MODE_CONTROL = "mode";
/**
 * The secret fields a Run again form must have typed again (their control names, one value each):
 * the execution it runs again was given them, and only "[redacted]" was stored. Required in the
 * browser and checked by the server, so that the run is never sent without one, unasked.
 */
export const TYPE_AGAIN_CONTROL = "type_again";

/** Options of {@link SchemaForm}. */
export interface SchemaFormProps {
  capability: RegisteredCapability;
  /** Where the form posts (the capability page itself). */
  action: string;
  /** What was submitted, to fill the form again after a problem; null shows the schema's defaults. Secrets are never filled in. */
  values: URLSearchParams | null;
  /** A message per control name. */
  errors: Record<string, string>;
}

/** The question asked before a capability that may change something runs. */
export function confirmQuestion(capability: Pick<RegisteredCapability, "id">): string {
  return `${capability.id} may change something (effect: write). Run it?`;
}

function rangeText(min: number | null, max: number | null, unit = ""): string | null {
  if (min !== null && max !== null) return `from ${min} to ${max}${unit}`;
  if (min !== null) return `at least ${min}${unit}`;
  if (max !== null) return `at most ${max}${unit}`;
  return null;
}

/** The empty value a group could hold besides null, when it is valid: left empty it is null, so that one is sent only as raw JSON. */
function emptyValueOf(field: FieldSpec): string | null {
  if (field.kind === "list" || field.kind === "choices" || field.kind === "rows") return "[]";
  if (field.kind === "record" || (field.kind === "object" && field.fields.every((f) => !f.required))) return "{}";
  return null;
}

/** What a required field that may be null sends when left empty: null, for every kind. */
function nullHelp(field: FieldSpec): string {
  const other = emptyValueOf(field);
  return `May be null: left empty, it is sent as null${other ? ` (${other} only through the raw JSON box)` : ""}.`;
}

/** The help under a control: the description, then what the schema allows, in words. */
function helpText(field: FieldSpec): string {
  const parts: string[] = [];
  if (field.description) parts.push(field.description.endsWith(".") ? field.description : `${field.description}.`);
  const range = rangeText(field.minimum, field.maximum);
  if (field.kind === "integer") parts.push(`A whole number${range ? ` ${range}` : ""}.`);
  else if (field.kind === "number") parts.push(`A number${range ? ` ${range}` : ""}.`);
  const length = rangeText(field.minLength, field.maxLength, " characters");
  if (length && (field.kind === "text" || field.kind === "password")) parts.push(`${length[0]!.toUpperCase()}${length.slice(1)}.`);
  if (field.pattern) parts.push(`Must match ${field.pattern}.`);
  if (field.kind === "list") parts.push(`One ${field.item === "string" ? "value" : field.item === "integer" ? "whole number" : "number"} per line.`);
  if (field.kind === "choices") parts.push("Tick any number.");
  if (field.kind === "date") parts.push("A date.");
  if (field.kind === "datetime") parts.push("A date and time, as typed (no time zone is added).");
  if (field.kind === "timestamp") parts.push(`A date and time in the server's time zone (${serverTimeZone()}): it is sent with seconds and that zone's UTC offset.`);
  if (field.kind === "variant") parts.push("Choose its shape, then fill that shape's fields.");
  if (field.kind === "json") parts.push("JSON.");
  if (field.nullable) parts.push(field.required ? nullHelp(field) : "May be null.");
  // As every JSON the cockpit shows: a bidirectional override written as its escape (tester, session 33).
  if (field.hasDefault) parts.push(`Default: ${formatJson(field.default, 0)}.`);
  else if (field.defaultWithheld) parts.push("It has a default of its own, a secret not shown here: leave it empty to use it.");
  if (field.secret) parts.push("A secret: redacted before anything is stored or shown.");
  return parts.join(" ");
}

/**
 * An option as a person reads it: its text, unless another option reads the same (`1` and `"1"`,
 * `true` and `"true"`): then as JSON, so that the number and the text can be told apart.
 */
function optionLabel(option: unknown, options: readonly unknown[]): string {
  const text = String(option);
  return options.some((other) => other !== option && String(other) === text) ? JSON.stringify(option) : text;
}

/** In JSON text: an escaped control (`\u001b`…, `\n` and `\t` aside) or a raw bidirectional control. */
const HIDDEN_IN_FIELD = /\\u00[01][0-9a-f]|\\u007f|[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/;

/** The text a control starts with: what was submitted, else the default (never a secret). */
function initialText(field: FieldSpec, values: PostedForm | null): string {
  if (field.sensitive) return "";
  if (values) return values.get(field.control) ?? "";
  if (!field.hasDefault || field.default === undefined) return "";
  // A default holding a control or a bidirectional override would read in another order in its
  // field, and removing it would send another value: the field starts empty, the default applies,
  // and its help shows it as JSON with escapes.
  if (HIDDEN_IN_FIELD.test(JSON.stringify(field.default))) return "";
  if (field.kind === "json") return JSON.stringify(field.default, null, 2);
  if (field.kind === "timestamp" && typeof field.default === "string") return toServerWallTime(field.default);
  if (field.kind === "list" && Array.isArray(field.default)) return field.default.join("\n");
  return String(field.default);
}

function selected(field: FieldSpec, values: PostedForm | null): string[] {
  if (values) return values.getAll(field.control);
  if (!field.hasDefault) return [];
  return Array.isArray(field.default) ? field.default.map((v) => optionValue(v)) : [optionValue(field.default as never)];
}

/** The control for one field, by its kind. */
function Control(props: { field: FieldSpec; id: string; values: PostedForm | null; describedBy: string; invalid: boolean; inGroup?: boolean }) {
  const { field, id, values } = props;
  const common = { id, name: field.control, "aria-describedby": props.describedBy || undefined, "aria-invalid": props.invalid ? "true" : undefined };
  const text = initialText(field, values);
  // The browser refuses to send an empty `required` control: not for one left empty on purpose,
  // which a nullable field (sent as null) and a field in a group (checked by the server) may be.
  const required = (field.required && !field.nullable && !props.inGroup) || (values?.getAll(TYPE_AGAIN_CONTROL).includes(field.control) ?? false);
  switch (field.kind) {
    case "boolean": {
      const checked = values ? values.has(field.control) : field.default === true;
      return <input type="checkbox" value="true" checked={checked} {...common} />;
    }
    case "choices": {
      // Checkboxes, not a multiple select: no ctrl-click to learn, every option visible.
      const chosen = selected(field, values);
      return (
        <div class="checkbox-group" role="group" id={id} aria-describedby={common["aria-describedby"]}>
          {field.options.map((option, k) => (
            <label class="checkbox">
              <input type="checkbox" name={field.control} value={optionValue(option)} checked={chosen.includes(optionValue(option))} id={`${id}-${k}`} />
              <span>{optionLabel(option, field.options)}</span>
            </label>
          ))}
        </div>
      );
    }
    case "date":
    case "datetime":
      return <input type={field.kind === "date" ? "date" : "datetime-local"} value={text} required={required} {...common} />;
    case "timestamp":
      // step 1: a moment may have seconds, which the box's default step (a minute) would refuse.
      return <input type="datetime-local" step="1" value={text} required={required} {...common} />;
    case "choice": {
      const chosen = selected(field, values);
      return (
        <select {...common} required={required}>
          {!(field.required && field.hasDefault && !field.nullable) ? <option value="">{!field.required ? "— not set —" : field.nullable ? "— null —" : "— choose —"}</option> : null}
          {field.options.map((option) => (
            <option value={optionValue(option)} selected={chosen.includes(optionValue(option))}>
              {optionLabel(option, field.options)}
            </option>
          ))}
        </select>
      );
    }
    case "list":
    case "json":
      // Secrets, or JSON holding some (an array or a record of sensitive strings): never shown as typed.
      if (field.secret || field.sensitive) return <input type="password" autocomplete="off" spellcheck={false} required={required} {...common} />;
      return (
        <textarea rows={field.kind === "list" ? 4 : 5} spellcheck={false} required={required} class={field.kind === "json" ? "mono" : undefined} {...common}>
          {text}
        </textarea>
      );
    case "number":
    case "integer":
      return (
        <input
          type={field.secret ? "password" : "number"}
          inputmode={field.kind === "integer" ? "numeric" : "decimal"}
          step={field.kind === "integer" ? "1" : "any"}
          min={field.minimum === null ? undefined : String(field.minimum)}
          max={field.maximum === null ? undefined : String(field.maximum)}
          value={text}
          required={required}
          autocomplete={field.secret ? "off" : undefined}
          {...common}
        />
      );
    case "password":
      return <input type="password" autocomplete="new-password" required={required} minlength={field.minLength ?? undefined} maxlength={field.maxLength ?? undefined} {...common} />;
    case "text":
      // No `pattern` attribute: browsers read it with their own regex flavour; the server checks the schema's.
      return <input type="text" value={text} required={required} minlength={field.minLength ?? undefined} maxlength={field.maxLength ?? undefined} spellcheck={false} {...common} />;
  }
}

/**
 * A control's id, from its name: unique in the form, nested fields included. Dots become dashes
 * (`input.rows.2.path` → `field-input-rows-2-path`); any other character but letters, digits and
 * `_` is written `~<hex>~`, so `a-b` and `a.b` stay apart and an id holds no space
 * (`aria-describedby` lists ids by spaces). run-form.js's idOf is the same function.
 */
const idOf = (control: string) => `field-${control.replace(/[^A-Za-z0-9_]/gu, (c) => (c === "." ? "-" : `~${c.codePointAt(0)!.toString(16)}~`))}`;

/** The problem of a field and of its own fields, shown under it. */
function FieldError(props: { id: string; error: string | undefined }) {
  if (!props.error) return null;
  return (
    <p class="field-error" id={`${props.id}-error`}>
      <span aria-hidden="true">✕ </span>
      {props.error}
    </p>
  );
}

/** What a field takes as props; `inGroup` marks fields inside rows, variants or optional groups (no `required` attribute there: the server checks). */
interface FieldProps {
  field: FieldSpec;
  values: PostedForm | null;
  errors: Record<string, string>;
  inGroup?: boolean;
}

/**
 * How many rows of one rows or record field are drawn as fields. An input of 50,000 rows (a list of
 * files) was a 40 MB page, drawn for 5 s on the server's one thread while every other request
 * waited, that Chromium did not finish loading in 90 s (cockpit tester, session 46).
 */
export const MAX_DRAWN_ROWS = 200;

/**
 * The rows a rows/record field shows: those submitted (every one, at its own index: the first
 * MAX_DRAWN_ROWS of them, and as many again of those past it that have a problem, so that it is
 * shown at its field), plus one spare for a new item after the last one sent; and the other rows
 * sent past that bound, kept as they were.
 */
function rowIndexes(field: FieldSpec, values: PostedForm | null, errors: Record<string, string>): { drawn: number[]; kept: number[] } {
  const sent = values ? values.rowIndexes(field.control) : [];
  const spare = (sent.at(-1) ?? -1) + 1;
  if (sent.length <= MAX_DRAWN_ROWS) return { drawn: [...sent, spare], kept: [] };
  const faulty = new Set<number>();
  const prefix = `${field.control}.`;
  for (const name of Object.keys(errors)) {
    if (!name.startsWith(prefix)) continue;
    const index = Number(name.slice(prefix.length).split(".", 1)[0]);
    if (Number.isSafeInteger(index) && index >= sent[MAX_DRAWN_ROWS]! && faulty.size < MAX_DRAWN_ROWS) faulty.add(index);
  }
  const past = sent.slice(MAX_DRAWN_ROWS);
  return { drawn: [...sent.slice(0, MAX_DRAWN_ROWS), ...past.filter((index) => faulty.has(index)), spare], kept: past.filter((index) => !faulty.has(index)) };
}

/** What an attribute's value is written as: the characters HTML gives a meaning escaped. */
const attribute = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The hidden controls of the kept rows, as markup written here: tens of thousands of them (two
 * values a row, 50,000 rows) cost the server's thread about a second as JSX elements.
 */
function keptControls(field: FieldSpec, values: PostedForm, kept: number[]): string {
  let html = "";
  for (const index of kept) {
    for (const name of values.namesUnderRow(field.control, index)) {
      const named = attribute(name);
      for (const value of values.getAll(name)) html += `<input type="hidden" name="${named}" value="${attribute(value)}">`;
    }
  }
  return html;
}

/** Rows sent past the bound: each of their values as a hidden control, so that sending the form sends them again unchanged. */
function KeptRows(props: { field: FieldSpec; values: PostedForm; kept: number[]; label: string }) {
  const { field, values, kept, label } = props;
  const plural = label === "entry" ? "entries" : "rows";
  return (
    <>
      {raw(keptControls(field, values, kept))}
      <p class="help">{`${kept.length.toLocaleString("en")} more ${kept.length === 1 ? label : plural} (${MAX_DRAWN_ROWS.toLocaleString("en")} are shown at most, and those with a problem) are kept as they were and sent again with the form. To change them, send the whole input through the raw JSON box below.`}</p>
    </>
  );
}

/** Repeatable rows: one fieldset per item, a spare empty row, and a template run-form.js clones for "Add a row". */
function RowsGroup(props: FieldProps) {
  const { field } = props;
  const { drawn: rows, kept } = rowIndexes(field, props.values, props.errors);
  const label = field.kind === "record" ? "entry" : "row";
  return (
    <div class="rows" data-rows={field.control} data-next-row={String(rows.at(-1)! + 1)}>
      <ol class="row-list">
        {rows.map((index) => (
          <li class="row" data-row={String(index)}>
            {rowFields(field.fields, index, field.control).map((child) => (
              <Field field={child} values={props.values} errors={props.errors} inGroup />
            ))}
          </li>
        ))}
      </ol>
      {kept.length > 0 && props.values ? <KeptRows field={field} values={props.values} kept={kept} label={label} /> : null}
      <template data-row-template={field.control} data-row-index={ROW_INDEX}>
        <li class="row" data-row="">
          {field.fields.map((child) => (
            <Field field={child} values={null} errors={{}} inGroup />
          ))}
        </li>
      </template>
      <button type="button" class="button" data-add-row={field.control} hidden>
        {`Add ${label === "entry" ? "an entry" : "a row"}`}
      </button>
      <p class="help">{`Empty ${label.endsWith("y") ? `${label.slice(0, -1)}ies` : `${label}s`} are left out.${rows.length > 1 ? "" : " Without JavaScript, send the form to get another empty " + label + "."}`}</p>
    </div>
  );
}

/** A chooser between object shapes, then the fields of each shape; run-form.js shows only the chosen one. */
function VariantGroup(props: FieldProps) {
  const { field, values } = props;
  const chosen = values?.get(`${field.control}.variant`) ?? "";
  return (
    <div class="variants" data-variants={field.control}>
      <div class="variant-choice" role="radiogroup" aria-label={`Shape of ${field.name}`}>
        {field.nullable ? (
          // A chosen shape cannot be unchosen: null (or, when optional, nothing) is a choice of its own.
          <label class="checkbox">
            <input type="radio" name={`${field.control}.variant`} value="" checked={chosen === ""} data-variant-choice="" />
            <span>{field.required ? "null" : "not set"}</span>
          </label>
        ) : null}
        {field.variants.map((variant, k) => (
          <label class="checkbox">
            <input type="radio" name={`${field.control}.variant`} value={String(k)} checked={chosen === String(k)} data-variant-choice={String(k)} />
            <span>{variant.label}</span>
          </label>
        ))}
      </div>
      {field.variants.map((variant, k) => (
        <fieldset class="subfields variant" data-variant={String(k)}>
          <legend>{variant.label}</legend>
          {variant.fields.length === 0 ? <p class="muted small">No more fields.</p> : variant.fields.map((child) => <Field field={child} values={values} errors={props.errors} inGroup />)}
        </fieldset>
      ))}
    </div>
  );
}

/** The heading of a field: its name and whether it is required. */
function FieldLabel(props: { field: FieldSpec; for?: string }) {
  const { field } = props;
  const content = (
    <>
      <span class="field-name mono">{field.name}</span> <span class={field.required ? "tag tag-required" : "tag"}>{field.required ? "required" : "optional"}</span>
    </>
  );
  return props.for ? <label for={props.for}>{content}</label> : <legend>{content}</legend>;
}

/** One labelled field with its help and its problem, if any; a group of fields for objects, rows, records and variants. */
function Field(props: FieldProps) {
  const { field } = props;
  const id = idOf(field.control);
  const help = helpText(field);
  const error = props.errors[field.control];
  const describedBy = [help ? `${id}-help` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ");
  const helpLine = help ? (
    <p class="help" id={`${id}-help`}>
      {help}
    </p>
  ) : null;
  const group = field.kind === "object" || field.kind === "rows" || field.kind === "record" || field.kind === "variant";
  if (group) {
    // An optional group, or one that may be null, may be left empty: its fields are then no more
    // required than it is.
    const inGroup = props.inGroup || !field.required || field.nullable || field.kind !== "object";
    return (
      <fieldset class={`field subfields field-${field.kind}${error ? " has-error" : ""}`} data-field={field.name} data-kind={field.kind} id={id} aria-describedby={describedBy || undefined}>
        <FieldLabel field={field} />
        {helpLine}
        {field.kind === "object" ? field.fields.map((child) => <Field field={child} values={props.values} errors={props.errors} inGroup={inGroup} />) : null}
        {field.kind === "rows" || field.kind === "record" ? <RowsGroup {...props} /> : null}
        {field.kind === "variant" ? <VariantGroup {...props} /> : null}
        <FieldError id={id} error={error} />
      </fieldset>
    );
  }
  const label = <FieldLabel field={field} for={field.kind === "choices" ? undefined : id} />;
  const control = <Control field={field} id={id} values={props.values} describedBy={describedBy} invalid={Boolean(error)} inGroup={props.inGroup} />;
  return (
    <div class={`field field-${field.kind}${error ? " has-error" : ""}`} data-field={field.name} data-kind={field.kind}>
      {field.kind === "boolean" ? (
        <div class="checkbox-row">
          {control}
          {label}
        </div>
      ) : field.kind === "choices" ? (
        <fieldset class="subfields plain">
          {label}
          {control}
        </fieldset>
      ) : (
        <>
          {label}
          {control}
        </>
      )}
      {helpLine}
      <FieldError id={id} error={error} />
    </div>
  );
}

/**
 * The input form generated from a capability's input JSON Schema (README.md), for both "Run" (a
 * direct call) and "Run as execution". It posts without JavaScript; for `effect: "write"` it asks
 * for confirmation (run-form.js's `confirm()`, or a box to tick when scripts are off).
 */
export function SchemaForm(props: SchemaFormProps) {
  const { capability, errors } = props;
  const shape = formShape(capability.input_schema);
  const values = props.values ? new PostedForm(props.values) : null;
  // The raw JSON box is never filled again with a secret: it would carry it back. Only JSON that
  // gives no value to a place the schema marks sensitive is shown (Run again fills it so).
  const given = values?.get(RAW_JSON_CONTROL) ?? "";
  const withheld = given.trim() !== "" && mayHoldSecret(given, capability.input_schema);
  const raw = withheld ? "" : given;
  const rawError = errors[RAW_JSON_CONTROL];
  // Described and marked as every other field is (Field): its help, then its problem.
  const rawDescribedBy = [withheld ? "raw-json-help" : "", rawError ? "raw-json-error" : ""].filter(Boolean).join(" ");
  const write = capability.effect === "write";
  return (
    <form method="post" action={props.action} class="run-form" data-docket-run data-confirm={write ? confirmQuestion(capability) : undefined}>
      {shape === null ? null : shape.length === 0 ? (
        <p class="muted">This capability takes no input.</p>
      ) : (
        <fieldset class="fields">
          <legend>Input</legend>
          {shape.map((field) => (
            <Field field={field} values={values} errors={errors} />
          ))}
        </fieldset>
      )}
      <details class={`raw-json${rawError ? " has-error" : ""}`} open={shape === null || raw.trim() !== "" || Boolean(rawError)}>
        <summary>{shape === null ? "Input as JSON" : "Send raw JSON instead"}</summary>
        <label for="raw-json">{shape === null ? "The whole input, as JSON (this schema has no form)." : "The whole input as JSON; when filled it replaces the fields above."}</label>
        {withheld ? (
          <p class="help" id="raw-json-help">
            This input holds secrets, so the JSON you sent is not filled in again: paste it once more.
          </p>
        ) : null}
        <textarea id="raw-json" name={RAW_JSON_CONTROL} rows={6} class="mono" spellcheck={false} aria-describedby={rawDescribedBy || undefined} aria-invalid={rawError ? "true" : undefined}>
          {raw}
        </textarea>
        {rawError ? (
          <p class="field-error" id="raw-json-error">
            <span aria-hidden="true">✕ </span>
            {rawError}
          </p>
        ) : null}
      </details>
      {(values?.getAll(TYPE_AGAIN_CONTROL) ?? []).map((control) => (
        <input type="hidden" name={TYPE_AGAIN_CONTROL} value={control} />
      ))}
      {write ? (
        <>
          <input type="hidden" name={CONFIRM_CONTROL} value="" data-confirmed />
          <noscript>
            <label class="confirm-box">
              <input type="checkbox" name={CONFIRM_CONTROL} value="1" required /> I understand that {capability.id} may change something (effect: write).
            </label>
          </noscript>
          {errors[CONFIRM_CONTROL] ? (
            <p class="field-error">
              <span aria-hidden="true">✕ </span>
              {errors[CONFIRM_CONTROL]}
            </p>
          ) : null}
        </>
      ) : null}
      <div class="actions">
        {callsDirectly(capability) ? (
          <button type="submit" name={MODE_CONTROL} value="call" class="button">
            Run
          </button>
        ) : null}
        {runsAsExecution(capability) ? (
          <button type="submit" name={MODE_CONTROL} value="start" class="button button-primary">
            Run as execution
          </button>
        ) : (
          <span class="muted">This capability runs only as a direct call.</span>
        )}
        {callsDirectly(capability) ? null : <span class="muted">This capability runs only as an execution.</span>}
      </div>
    </form>
  );
}

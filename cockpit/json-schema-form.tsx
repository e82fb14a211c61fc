/** @jsxImportSource hono/jsx */
import { callsDirectly, runsAsExecution, type RegisteredCapability } from "../runtime/capability/registered.ts";
import { formShape, type FieldSpec } from "./form-fields.ts";
import { hasSensitive } from "../runtime/execution/redaction.ts";
import { optionValue, RAW_JSON_CONTROL } from "./form-input.ts";

/** The control that marks a write as confirmed: set by run-form.js after `confirm()`, or ticked without JavaScript. */
export const CONFIRM_CONTROL = "confirmed";

/** The control carrying which button was pressed. */
export const MODE_CONTROL = "mode";

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
  if (field.kind === "choices") parts.push("Select any number.");
  if (field.kind === "json") parts.push("JSON.");
  if (field.nullable) parts.push("May be null.");
  if (field.hasDefault) parts.push(`Default: ${JSON.stringify(field.default)}.`);
  if (field.secret) parts.push("A secret: redacted before anything is stored or shown.");
  return parts.join(" ");
}

/** The text a control starts with: what was submitted, else the default (never a secret). */
function initialText(field: FieldSpec, values: URLSearchParams | null): string {
  if (field.sensitive) return "";
  if (values) return values.get(field.control) ?? "";
  if (!field.hasDefault || field.default === undefined) return "";
  if (field.kind === "json") return JSON.stringify(field.default, null, 2);
  if (field.kind === "list" && Array.isArray(field.default)) return field.default.join("\n");
  return String(field.default);
}

function selected(field: FieldSpec, values: URLSearchParams | null): string[] {
  if (values) return values.getAll(field.control);
  if (!field.hasDefault) return [];
  return Array.isArray(field.default) ? field.default.map((v) => optionValue(v)) : [optionValue(field.default as never)];
}

/** The control for one field, by its kind. */
function Control(props: { field: FieldSpec; id: string; values: URLSearchParams | null; describedBy: string; invalid: boolean }) {
  const { field, id, values } = props;
  const common = { id, name: field.control, "aria-describedby": props.describedBy || undefined, "aria-invalid": props.invalid ? "true" : undefined };
  const text = initialText(field, values);
  switch (field.kind) {
    case "boolean": {
      const checked = values ? values.has(field.control) : field.default === true;
      return <input type="checkbox" value="true" checked={checked} {...common} />;
    }
    case "choice":
    case "choices": {
      const chosen = selected(field, values);
      const many = field.kind === "choices";
      return (
        <select {...common} multiple={many} required={field.required && !many}>
          {!many && !(field.required && field.hasDefault) ? <option value="">{field.required ? "— choose —" : "— not set —"}</option> : null}
          {field.options.map((option) => (
            <option value={optionValue(option)} selected={chosen.includes(optionValue(option))}>
              {String(option)}
            </option>
          ))}
        </select>
      );
    }
    case "list":
    case "json":
      if (field.secret) return <input type="password" autocomplete="off" spellcheck={false} required={field.required} {...common} />;
      return (
        <textarea rows={field.kind === "list" ? 4 : 5} spellcheck={false} required={field.required} class={field.kind === "json" ? "mono" : undefined} {...common}>
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
          required={field.required}
          autocomplete={field.secret ? "off" : undefined}
          {...common}
        />
      );
    case "password":
      return <input type="password" autocomplete="new-password" required={field.required} minlength={field.minLength ?? undefined} maxlength={field.maxLength ?? undefined} {...common} />;
    case "text":
      // No `pattern` attribute: browsers read it with their own regex flavour; the server checks the schema's.
      return <input type="text" value={text} required={field.required} minlength={field.minLength ?? undefined} maxlength={field.maxLength ?? undefined} spellcheck={false} {...common} />;
  }
}

/** One labelled field with its help and its problem, if any. */
function Field(props: { field: FieldSpec; index: number; values: URLSearchParams | null; error: string | undefined }) {
  const { field } = props;
  const id = `field-${props.index}`;
  const help = helpText(field);
  const describedBy = [help ? `${id}-help` : "", props.error ? `${id}-error` : ""].filter(Boolean).join(" ");
  const label = (
    <label for={id}>
      <span class="field-name mono">{field.name}</span> <span class={field.required ? "tag tag-required" : "tag"}>{field.required ? "required" : "optional"}</span>
    </label>
  );
  return (
    <div class={`field field-${field.kind}${props.error ? " has-error" : ""}`} data-field={field.name} data-kind={field.kind}>
      {field.kind === "boolean" ? (
        <div class="checkbox-row">
          <Control field={field} id={id} values={props.values} describedBy={describedBy} invalid={Boolean(props.error)} />
          {label}
        </div>
      ) : (
        <>
          {label}
          <Control field={field} id={id} values={props.values} describedBy={describedBy} invalid={Boolean(props.error)} />
        </>
      )}
      {help ? (
        <p class="help" id={`${id}-help`}>
          {help}
        </p>
      ) : null}
      {props.error ? (
        <p class="field-error" id={`${id}-error`}>
          <span aria-hidden="true">✕ </span>
          {props.error}
        </p>
      ) : null}
    </div>
  );
}

/**
 * The input form generated from a capability's input JSON Schema (README.md), for both "Run" (a
 * direct call) and "Run as execution". It posts without JavaScript; for `effect: "write"` it asks
 * for confirmation (run-form.js's `confirm()`, or a box to tick when scripts are off).
 */
export function SchemaForm(props: SchemaFormProps) {
  const { capability, values, errors } = props;
  const shape = formShape(capability.input_schema);
  // The raw JSON box is never filled again when the input holds a secret: it would carry it back.
  const secrets = hasSensitive(capability.input_schema);
  const raw = secrets ? "" : (values?.get(RAW_JSON_CONTROL) ?? "");
  const write = capability.effect === "write";
  return (
    <form method="post" action={props.action} class="run-form" data-docket-run data-confirm={write ? confirmQuestion(capability) : undefined}>
      {shape === null ? null : shape.length === 0 ? (
        <p class="muted">This capability takes no input.</p>
      ) : (
        <fieldset class="fields">
          <legend>Input</legend>
          {shape.map((field, index) => (
            <Field field={field} index={index} values={values} error={errors[field.control]} />
          ))}
        </fieldset>
      )}
      <details class="raw-json" open={shape === null || raw.trim() !== "" || Boolean(errors[RAW_JSON_CONTROL])}>
        <summary>{shape === null ? "Input as JSON" : "Send raw JSON instead"}</summary>
        <label for="raw-json">{shape === null ? "The whole input, as JSON (this schema has no form)." : "The whole input as JSON; when filled it replaces the fields above."}</label>
        {secrets && values?.get(RAW_JSON_CONTROL)?.trim() ? <p class="help">This input holds secrets, so the JSON you sent is not filled in again: paste it once more.</p> : null}
        <textarea id="raw-json" name={RAW_JSON_CONTROL} rows={6} class="mono" spellcheck={false} aria-describedby={errors[RAW_JSON_CONTROL] ? "raw-json-error" : undefined}>
          {raw}
        </textarea>
        {errors[RAW_JSON_CONTROL] ? (
          <p class="field-error" id="raw-json-error">
            <span aria-hidden="true">✕ </span>
            {errors[RAW_JSON_CONTROL]}
          </p>
        ) : null}
      </details>
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

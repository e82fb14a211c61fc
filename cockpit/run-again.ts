import type { RegisteredCapability } from "../runtime/capability/registered.ts";
import { isExecutionId } from "../runtime/execution/execution-id.ts";
import { hasSensitive } from "../runtime/execution/redaction.ts";
import type { ExecutionStore } from "../runtime/store/store.ts";
import { formShape, rowFields, type FieldSpec } from "./form-fields.ts";
import { optionValue, RAW_JSON_CONTROL } from "./form-input.ts";
import { toServerWallTime } from "./local-time.ts";
import type { ProblemProps } from "./pages/problem.tsx";

/** What `?again=<id>` on a capability page gives: nothing asked, a filled form, or a problem page. */
export type AgainValues =
  | { kind: "none" }
  | { kind: "filled"; values: URLSearchParams; notice: string }
  | { kind: "refused"; problem: Omit<ProblemProps, "root"> };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** Appends what a field's controls would have sent for a stored value; nothing for a secret. */
function appendValues(values: URLSearchParams, field: FieldSpec, value: unknown): void {
  if (field.sensitive || value === undefined) return;
  const put = (text: string) => values.append(field.control, text);
  switch (field.kind) {
    case "boolean":
      if (value === true) put("true");
      return;
    case "choice":
      return put(optionValue(value as never));
    case "choices":
      if (Array.isArray(value)) for (const item of value) put(optionValue(item as never));
      return;
    case "list":
      if (Array.isArray(value)) put(value.map(String).join("\n"));
      return;
    case "json":
      return put(JSON.stringify(value, null, 2));
    case "timestamp":
      // The date-and-time box holds no zone: the same moment, as the server's wall time.
      if (typeof value === "string") put(toServerWallTime(value));
      return;
    case "object":
      if (isObject(value)) for (const child of field.fields) appendValues(values, child, value[child.name]);
      return;
    case "rows":
      if (Array.isArray(value)) {
        value.forEach((item, index) => {
          if (isObject(item)) for (const child of rowFields(field.fields, index, field.control)) appendValues(values, child, item[child.name]);
        });
      }
      return;
    case "record":
      if (isObject(value)) {
        Object.entries(value).forEach(([key, item], index) => {
          const [keyField, valueField] = rowFields(field.fields, index, field.control) as [FieldSpec, FieldSpec];
          appendValues(values, keyField, key);
          appendValues(values, valueField, item);
        });
      }
      return;
    case "variant": {
      if (!isObject(value)) return;
      const k = field.variants.findIndex((v) => (v.constant ? value[v.constant.name] === v.constant.value : v.fields.every((f) => !f.required || f.name in value)));
      if (k < 0) return;
      values.set(`${field.control}.variant`, String(k));
      for (const child of field.variants[k]!.fields) appendValues(values, child, value[child.name]);
      return;
    }
    default:
      if (value !== null) put(String(value));
  }
}

/**
 * The members of a stored input that no field of the form holds, by path (`old_name`,
 * `owner.nick`): the capability's schema changed since (a field renamed or removed). Objects are
 * followed into their fieldsets; rows, records and shapes are taken as a whole.
 */
function unheldPaths(fields: FieldSpec[], value: Record<string, unknown>, prefix = ""): string[] {
  const paths: string[] = [];
  for (const [key, member] of Object.entries(value)) {
    const field = fields.find((f) => f.name === key);
    if (!field) paths.push(prefix + key);
    else if (field.kind === "object" && isObject(member)) paths.push(...unheldPaths(field.fields, member, `${prefix}${key}.`));
  }
  return paths;
}

/** What {@link formValuesOf} gives: the values, the secrets to type again, the members no field holds. */
export interface RefilledForm {
  values: URLSearchParams;
  secrets: string[];
  /** Members of the stored input the form has no field for (the schema changed since), by path. */
  unheld: string[];
}

/**
 * The form values that send `input` again: every field as it was stored, except those that are or
 * hold a secret — the store only has "[redacted]" for them, so the person types them again. When
 * the form cannot hold all of the input (the schema changed since), the whole input is also put in
 * the raw JSON box, unless the input holds secrets (that box is never filled back then).
 */
export function formValuesOf(capability: RegisteredCapability, input: unknown): RefilledForm {
  const values = new URLSearchParams();
  const shape = formShape(capability.input_schema);
  const secretInput = hasSensitive(capability.input_schema);
  if (shape === null) {
    // Raw JSON only: a stored secret cannot be filled back in, so such an input starts empty.
    if (!secretInput) values.set(RAW_JSON_CONTROL, JSON.stringify(input ?? null, null, 2));
    return { values, secrets: secretInput ? ["the input"] : [], unheld: [] };
  }
  const fields = isObject(input) ? input : {};
  for (const field of shape) appendValues(values, field, fields[field.name]);
  const unheld = isObject(input) ? unheldPaths(shape, input) : input === undefined || input === null ? [] : ["the whole input (it is not an object of fields)"];
  if (unheld.length > 0 && !secretInput) values.set(RAW_JSON_CONTROL, JSON.stringify(input, null, 2));
  return { values, secrets: shape.filter((f) => f.sensitive).map((f) => f.name), unheld };
}

/** What the page says about the fields the form could not hold, and where the old input is. */
function unheldNotice(unheld: string[], inRawBox: boolean): string {
  if (unheld.length === 0) return "";
  const shown = unheld.slice(0, 10).join(", ") + (unheld.length > 10 ? ` and ${unheld.length - 10} more` : "");
  const where = inRawBox
    ? " The whole input as it was is in the raw JSON box, which replaces the fields when sent: edit it to the capability's fields now, or empty it to send the form."
    : "";
  return ` The form has no field for ${shown}: the capability's input changed since.${where}`;
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
  const { values, secrets, unheld } = formValuesOf(capability, execution.input);
  const typeAgain = secrets.length ? ` Type ${secrets.join(", ")} again: secrets are never stored.` : "";
  const changed = unheldNotice(unheld, values.has(RAW_JSON_CONTROL) && formShape(capability.input_schema) !== null);
  return { kind: "filled", values, notice: `The form holds ${unheld.length ? "what it can of " : ""}the input of ${again}.${changed}${typeAgain}` };
}

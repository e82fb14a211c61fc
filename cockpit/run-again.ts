import type { RegisteredCapability } from "../runtime/capability/registered.ts";
import { isExecutionId } from "../runtime/execution/execution-id.ts";
import { hasSensitive } from "../runtime/execution/redaction.ts";
import type { ExecutionStore } from "../runtime/store/store.ts";
import { formShape, type FieldSpec } from "./form-fields.ts";
import { optionValue, RAW_JSON_CONTROL } from "./form-input.ts";
import type { ProblemProps } from "./pages/problem.tsx";

/** What `?again=<id>` on a capability page gives: nothing asked, a filled form, or a problem page. */
export type AgainValues =
  | { kind: "none" }
  | { kind: "filled"; values: URLSearchParams; notice: string }
  | { kind: "refused"; problem: Omit<ProblemProps, "root"> };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** One field's stored value as the form's control would have sent it; nothing for a secret. */
function controlValues(field: FieldSpec, value: unknown): string[] {
  if (field.sensitive || value === undefined) return [];
  switch (field.kind) {
    case "boolean":
      return value === true ? ["true"] : [];
    case "choice":
      return [optionValue(value as never)];
    case "choices":
      return Array.isArray(value) ? value.map((item) => optionValue(item as never)) : [];
    case "list":
      return Array.isArray(value) ? [value.map(String).join("\n")] : [];
    case "json":
      return [JSON.stringify(value, null, 2)];
    default:
      return value === null ? [] : [String(value)];
  }
}

/**
 * The form values that send `input` again: every field as it was stored, except those that are or
 * hold a secret — the store only has "[redacted]" for them, so the person types them again.
 */
export function formValuesOf(capability: RegisteredCapability, input: unknown): { values: URLSearchParams; secrets: string[] } {
  const values = new URLSearchParams();
  const shape = formShape(capability.input_schema);
  if (shape === null) {
    // Raw JSON only: a stored secret cannot be filled back in, so such an input starts empty.
    if (!hasSensitive(capability.input_schema)) values.set(RAW_JSON_CONTROL, JSON.stringify(input ?? null, null, 2));
    return { values, secrets: hasSensitive(capability.input_schema) ? ["the input"] : [] };
  }
  const fields = isObject(input) ? input : {};
  for (const field of shape) for (const text of controlValues(field, fields[field.name])) values.append(field.control, text);
  return { values, secrets: shape.filter((f) => f.sensitive).map((f) => f.name) };
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
  const { values, secrets } = formValuesOf(capability, execution.input);
  const typeAgain = secrets.length ? ` Type ${secrets.join(", ")} again: secrets are never stored.` : "";
  return { kind: "filled", values, notice: `The form holds the input of ${again}.${typeAgain}` };
}

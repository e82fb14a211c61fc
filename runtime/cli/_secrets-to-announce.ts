import type { RegisteredCapability } from "../capability/registered.ts";
import { transformedSecrets } from "../execution/before-transforms.ts";
import { hasSensitive } from "../execution/redaction.ts";
import { sensitiveValues } from "../execution/secret-mask.ts";
import { checkValue, transforms } from "../execution/validate.ts";

/**
 * The secrets a run masks, to be announced with ::add-mask:: before it starts: those sent, and
 * those its schema gives the handler that were never sent (a default, `() => process.env.TOKEN`),
 * wherever its transforms put them, as the engine reads them (docs/security.md).
 */
export function secretsToAnnounce(declared: RegisteredCapability, given: unknown): string[] {
  // No --input is the empty object, as the engine reads it: the schema's defaults are still given.
  const input = given === undefined ? {} : given;
  const sent = sensitiveValues(input, declared.input_schema);
  if (!hasSensitive(declared.input_schema)) return sent;
  const checked = checkValue(declared.def.input, input, "input");
  if (!checked.ok || checked.value === input) return sent;
  const made = transforms(declared.def.input) ? transformedSecrets(declared.def.input, declared.input_schema, input, checked.value) : sensitiveValues(checked.value, declared.input_schema);
  return [...new Set([...sent, ...made])];
}

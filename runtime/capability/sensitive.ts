import * as v from "valibot";

/** The JSON Schema mark that makes the engine redact a value before it is stored (docs/handler-api.md). */
export const SENSITIVE_MARK = "x-docket-sensitive";

/** Marks a schema's value as a secret: redacted everywhere, still given to the handler. */
export function sensitive<S extends v.GenericSchema<any, any>>(schema: S) {
  return v.pipe(schema, v.metadata({ [SENSITIVE_MARK]: true }));
}

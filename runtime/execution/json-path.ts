// How a problem names a place in a JSON value: `input.items[3].size`, `input["a b"]`.

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** One step of a path: `[3]` for an index, `.name` for an identifier, `["a b"]` for any other key. */
export function pathStep(key: string | number): string {
  return typeof key === "number" ? `[${key}]` : IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

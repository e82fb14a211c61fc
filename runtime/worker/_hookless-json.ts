// JSON of the data docket builds on a handler's thread, written whatever the handler added to the
// prototypes every object shares (docs/containment.md, "Masking and the built-ins").

/**
 * As this module found them, before any capability code ran in the thread: a handler that
 * replaces JSON.stringify must not write its events (the main thread then failed to read them,
 * and the next task on the worker hung).
 */
const stringify = JSON.stringify;
const describe = Reflect.getOwnPropertyDescriptor;
const ownKeys = Object.keys;
const isArray = Array.isArray;
const ObjectPrototype = Object.prototype;
const ArrayPrototype = Array.prototype;

/**
 * The JSON text of `value`: plain data docket made itself (objects, arrays, strings, finite
 * numbers, booleans, null — an events batch). JSON.stringify calls a `toJSON` that objects
 * inherit: one a handler put on Object.prototype (or Array.prototype) was called for every event
 * of the batch, and put the secrets the events' texts had been masked of back into them
 * (containment tester, session 45). With no such hook (the usual case: two descriptor reads),
 * JSON.stringify writes it; with one, it is written here, member by member, never asking an
 * object for its `toJSON`.
 */
export function hooklessJson(value: unknown): string {
  if (describe(ObjectPrototype, "toJSON") === undefined && describe(ArrayPrototype, "toJSON") === undefined) return stringify(value);
  return write(value) ?? "null";
}

/** JSON of one value; undefined where JSON writes nothing (undefined, a function, a symbol). */
function write(value: unknown): string | undefined {
  // A primitive's toJSON is never asked for (only an object's or a BigInt's): JSON writes it as it is.
  if (value === null || typeof value !== "object") return typeof value === "bigint" ? undefined : stringify(value);
  if (isArray(value)) {
    let text = "[";
    // Indexes only: no iterator, which the handler may have replaced too.
    for (let i = 0; i < value.length; i++) text += `${i === 0 ? "" : ","}${write(value[i]) ?? "null"}`;
    return `${text}]`;
  }
  const keys = ownKeys(value);
  let text = "{";
  let first = true;
  for (let i = 0; i < keys.length; i++) {
    const member = write((value as Record<string, unknown>)[keys[i]!]);
    if (member === undefined) continue;
    text += `${first ? "" : ","}${stringify(keys[i])}:${member}`;
    first = false;
  }
  return `${text}}`;
}

// Whether a trial worker's built-ins are still those it started with (load-probe.ts): trials that
// pass share a worker, and a top level that replaced `String.prototype.includes` there turned
// off the next file's check of the timers it leaves (the check reads paths with it). A worker
// whose built-ins changed runs no further trial.

/** The objects whose functions docket's own code in a trial worker calls, and a top level may replace. */
function watchedObjects(): object[] {
  const bun = (globalThis as { Bun?: object }).Bun;
  return [
    globalThis,
    process,
    Object,
    Object.prototype,
    Function.prototype,
    Array,
    Array.prototype,
    String,
    String.prototype,
    Number.prototype,
    RegExp.prototype,
    Map.prototype,
    Set.prototype,
    WeakMap.prototype,
    Promise,
    Promise.prototype,
    Error,
    Error.prototype,
    Symbol,
    JSON,
    Reflect,
    Math,
    AbortSignal,
    ...(bun ? [bun] : []),
  ];
}

/**
 * The functions and objects a property holds (its getter, setter or value); a number or a string
 * (Error.stackTraceLimit, a version) is data, not code docket calls.
 */
function codeOf(descriptor: PropertyDescriptor): unknown[] {
  return [descriptor.get, descriptor.set, descriptor.value].filter((value) => typeof value === "function" || (typeof value === "object" && value !== null));
}

/** The functions and objects `object` holds under its own keys, as they are now. */
function ownValues(object: object): Map<PropertyKey, unknown[]> {
  const values = new Map<PropertyKey, unknown[]>();
  for (const key of Reflect.ownKeys(object)) {
    const descriptor = Reflect.getOwnPropertyDescriptor(object, key);
    const kept = descriptor === undefined ? [] : codeOf(descriptor);
    if (kept.length > 0) values.set(key, kept);
  }
  return values;
}

/**
 * Takes the built-ins as they are now; the function returned answers whether each is still the
 * same (a key added since is no change: a new global is the file's own).
 */
export function builtinsSnapshot(): () => boolean {
  const taken = watchedObjects().map((object) => [object, ownValues(object)] as const);
  return () => {
    for (const [object, before] of taken) {
      for (const [key, values] of before) {
        const descriptor = Reflect.getOwnPropertyDescriptor(object, key);
        if (descriptor === undefined) return false;
        const now = codeOf(descriptor);
        if (now.length !== values.length || now.some((value, i) => value !== values[i])) return false;
      }
    }
    return true;
  };
}

// Whether a trial worker's built-ins are still those it started with (load-probe.ts): trials that
// pass share a worker, and a top level that replaced `String.prototype.includes` there turned
// off the next file's check of the timers it leaves (the check reads paths with it). A worker
// whose built-ins changed runs no further trial; a file that replaced a method of the language's
// own objects is refused (docs/containment.md, "Loading").

/**
 * The objects whose functions docket's own code in a trial worker calls, and a top level may
 * replace, by name. `core`: the language's own (JSON, the prototypes of arrays, strings, maps,
 * promises…), whose methods docket's main thread calls everywhere: a file that replaces one is
 * refused, since imported there it would break the server (a `JSON.parse` replaced at a file's
 * top level stopped `docket serve` from ever listening, silently). The others (the global object,
 * `process`, `Bun`, `Math`, `Error`…) are patched by real packages (a `fetch` mock, a seeded
 * `Math.random`, source maps on `Error`): a change there only retires the trial worker.
 */
function watchedObjects(): Array<readonly [name: string, object: object, core: boolean]> {
  const bun = (globalThis as { Bun?: object }).Bun;
  return [
    ["globalThis", globalThis, false],
    ["process", process, false],
    ["Object", Object, true],
    ["Object.prototype", Object.prototype, true],
    ["Function.prototype", Function.prototype, true],
    ["Array", Array, true],
    ["Array.prototype", Array.prototype, true],
    ["String", String, true],
    ["String.prototype", String.prototype, true],
    ["Number.prototype", Number.prototype, true],
    ["RegExp.prototype", RegExp.prototype, true],
    ["Map.prototype", Map.prototype, true],
    ["Set.prototype", Set.prototype, true],
    ["WeakMap.prototype", WeakMap.prototype, true],
    ["Promise", Promise, true],
    ["Promise.prototype", Promise.prototype, true],
    ["Error", Error, false],
    ["Error.prototype", Error.prototype, false],
    ["Symbol", Symbol, false],
    ["JSON", JSON, true],
    ["Reflect", Reflect, true],
    ["Math", Math, false],
    ["AbortSignal", AbortSignal, false],
    ...(bun ? [["Bun", bun, false] as const] : []),
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

/** What a look at the built-ins found replaced or removed since they were taken. */
export interface BuiltinChanges {
  /** Of the language's own objects, named as `JSON.parse`: the file is refused. */
  core: string[];
  /** True when any other watched one changed: the trial worker runs no further trial. */
  other: boolean;
}

/**
 * Takes the built-ins as they are now; the function returned answers which of them are no longer
 * the same (a key added since is no change: a new global is the file's own).
 */
export function builtinsSnapshot(): () => BuiltinChanges {
  const taken = watchedObjects().map(([name, object, core]) => [name, object, core, ownValues(object)] as const);
  return () => {
    const changes: BuiltinChanges = { core: [], other: false };
    for (const [name, object, core, before] of taken) {
      for (const [key, values] of before) {
        const descriptor = Reflect.getOwnPropertyDescriptor(object, key);
        const now = descriptor === undefined ? [] : codeOf(descriptor);
        if (now.length === values.length && now.every((value, i) => value === values[i])) continue;
        if (core) changes.core.push(`${name}${typeof key === "symbol" ? `[${key.toString()}]` : `.${String(key)}`}`);
        else changes.other = true;
      }
    }
    return changes;
  };
}

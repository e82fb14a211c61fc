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
    // Object.prototype and Function.prototype are watched whole, added keys too, by
    // _shared-prototypes.ts, which refuses and puts back what changes there.
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
    ["Number", Number, true],
    ["Boolean", Boolean, true],
    ["RegExp", RegExp, true],
    ["Map", Map, true],
    ["Set", Set, true],
    ["Date", Date, true],
    ["Date.prototype", Date.prototype, true],
    ["Atomics", Atomics, true],
    // What every for…of, spread and Object.fromEntries of docket walks with (checking tester, session 44).
    ["%IteratorPrototype%", iteratorPrototype, true],
    ["%ArrayIteratorPrototype%", Object.getPrototypeOf([][Symbol.iterator]()), true],
    ["%MapIteratorPrototype%", Object.getPrototypeOf(new Map()[Symbol.iterator]()), true],
    ["%SetIteratorPrototype%", Object.getPrototypeOf(new Set()[Symbol.iterator]()), true],
    ["%StringIteratorPrototype%", Object.getPrototypeOf(""[Symbol.iterator]()), true],
    ["%TypedArray%", Object.getPrototypeOf(Uint8Array), true],
    ["%TypedArray%.prototype", Object.getPrototypeOf(Uint8Array.prototype), true],
    ["Error", Error, false],
    ["Error.prototype", Error.prototype, false],
    ["Symbol", Symbol, true],
    ["JSON", JSON, true],
    ["Reflect", Reflect, true],
    ["Math", Math, false],
    ["AbortSignal", AbortSignal, false],
    ...(bun ? [["Bun", bun, false] as const] : []),
  ];
}

/** %IteratorPrototype%: what every built-in iterator inherits from. */
const iteratorPrototype: object = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));

/**
 * Keys that change what the language does with every value of a kind once added to a core
 * prototype, though the prototype had none: `Array.prototype.toJSON` rewrote every array the
 * server sent, a `then` makes every such value a thenable (checking tester, session 44).
 */
const HOOK_KEYS: PropertyKey[] = ["toJSON", "then", Symbol.toPrimitive, Symbol.iterator, Symbol.asyncIterator];

// The language's own functions the looks below call, taken as this module is first evaluated
// (before any capability code): what they check may be the very functions a file replaced. The
// looks use no iterator either (index loops only): a replaced %ArrayIteratorPrototype%.next or
// Map iterator made them see nothing (checking tester, session 44).
const { getOwnPropertyDescriptor, defineProperty, deleteProperty, ownKeys, apply, setPrototypeOf } = Reflect;
const hasOwn = Object.hasOwn;
const symbolToString = Symbol.prototype.toString;

/**
 * Appends to an array by defining the index, never by assigning it: an assignment goes through a
 * setter a file may put on `Array.prototype[0]`, which hid what these looks found (checking tester,
 * session 44).
 */
function append<T>(list: T[], value: T): void {
  // A descriptor with no prototype: defineProperty reads its fields through the chain ("get" on Object.prototype).
  defineProperty(list, list.length, { __proto__: null, value, writable: true, enumerable: true, configurable: true } as PropertyDescriptor);
}

/** The global bindings of the language's own objects: `globalThis.JSON = {…}` replaces every JSON.parse at once. */
// The language's own only: the runtime's web APIs (TextEncoder, timers…) may be bound lazily, and
// docket's trial wraps the timers itself.
const CORE_GLOBALS: PropertyKey[] = ["JSON", "Object", "Array", "String", "Number", "Boolean", "Symbol", "Promise", "Reflect", "Date", "Atomics", "Map", "Set", "WeakMap", "WeakSet", "RegExp", "Function", "Proxy", "BigInt", "Uint8Array", "ArrayBuffer", "DataView"];

/** True for a key that reads as an array index ("0", "12"): one added to a core prototype acts in every array. */
function isIndexKey(key: PropertyKey): boolean {
  if (typeof key !== "string" || key.length === 0 || key.length > 10) return false;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** True when `list` holds `key` (no iterator, no method of the array). */
function holds(list: readonly PropertyKey[], key: PropertyKey): boolean {
  for (let i = 0; i < list.length; i++) if (list[i] === key) return true;
  return false;
}

/**
 * The functions and objects a property holds (its getter, setter or value); a number or a string
 * (Error.stackTraceLimit, a version) is data, not code docket calls.
 */
function codeOf(descriptor: PropertyDescriptor | undefined): unknown[] {
  const code: unknown[] = [];
  if (descriptor === undefined) return code;
  // Own fields only: a data descriptor has no `get`, and reading one would reach a getter a file
  // put on Object.prototype (one that throws stopped every look; checking tester, session 44).
  const parts = [hasOwn(descriptor, "get") ? descriptor.get : undefined, hasOwn(descriptor, "set") ? descriptor.set : undefined, hasOwn(descriptor, "value") ? descriptor.value : undefined];
  for (let i = 0; i < 3; i++) {
    const value = parts[i];
    if (typeof value === "function" || (typeof value === "object" && value !== null)) append(code, value);
  }
  return code;
}

/** What a look at the built-ins found changed since they were taken. */
export interface BuiltinChanges {
  /** Of the language's own objects, named as `JSON.parse`: the file is refused. */
  core: string[];
  /** True when any other watched one changed: the trial worker runs no further trial. */
  other: boolean;
}

/**
 * Takes the built-ins as they are now; the function returned answers which of them are no longer
 * the same (a key added since is no change — a new global is the file's own — but a hook key
 * added to a core prototype is).
 */
export function builtinsSnapshot(): () => BuiltinChanges {
  const taken = takeBuiltins();
  return () => {
    const changes: BuiltinChanges = { core: [], other: false };
    const found = changedBuiltins(taken);
    for (let i = 0; i < found.length; i++) {
      if (found[i]!.core) append(changes.core, found[i]!.name);
      else changes.other = true;
    }
    return changes;
  };
}

/** One watched object as it was taken: its keys holding code, what each held, and its descriptor to put back. */
interface Taken {
  name: string;
  object: object;
  core: boolean;
  keys: PropertyKey[];
  codes: unknown[][];
  descriptors: PropertyDescriptor[];
  /** Every own key it had, code or not: a key added since is looked at (index and hook keys). */
  all: PropertyKey[];
}

function takeBuiltins(): Taken[] {
  const watched = watchedObjects();
  const taken: Taken[] = [];
  for (let w = 0; w < watched.length; w++) {
    const object = watched[w]![1];
    const all = ownKeys(object);
    const entry: Taken = { name: watched[w]![0], object, core: watched[w]![2], keys: [], codes: [], descriptors: [], all };
    for (let k = 0; k < all.length; k++) {
      const descriptor = getOwnPropertyDescriptor(object, all[k]!);
      const code = codeOf(descriptor);
      if (code.length === 0) continue;
      append(entry.keys, all[k]!);
      append(entry.codes, code);
      // Kept with no prototype: defineProperty reads a descriptor's fields through its prototype
      // chain, where a getter a file put on Object.prototype ("get") threw and stopped the put-back.
      const own = { ...descriptor! };
      setPrototypeOf(own, null);
      append(entry.descriptors, own);
    }
    append(taken, entry);
  }
  return taken;
}

/** A key of a watched object replaced or removed since it was taken, or a hook key added to a core one. */
interface BuiltinChange {
  taken: Taken;
  key: PropertyKey;
  /** Where it was in `taken.keys`; -1 for a hook key that was not there (putting it back is deleting it). */
  at: number;
  name: string;
  core: boolean;
}

function keyName(key: PropertyKey): string {
  return typeof key === "symbol" ? `[${apply(symbolToString, key, [])}]` : `.${key as string}`;
}

function changedBuiltins(taken: Taken[]): BuiltinChange[] {
  const changes: BuiltinChange[] = [];
  for (let t = 0; t < taken.length; t++) {
    const entry = taken[t]!;
    for (let k = 0; k < entry.keys.length; k++) {
      const key = entry.keys[k]!;
      const now = codeOf(getOwnPropertyDescriptor(entry.object, key));
      const before = entry.codes[k]!;
      let same = now.length === before.length;
      for (let i = 0; same && i < now.length; i++) same = now[i] === before[i];
      // The global object is patched by real packages, but not where the language's own objects are bound.
      if (!same) append(changes, { taken: entry, key, at: k, name: `${entry.name}${keyName(key)}`, core: entry.core || (entry.object === globalThis && holds(CORE_GLOBALS, key)) });
    }
    if (!entry.core) continue;
    // Keys added since: a hook key, or an index, changes what the language does with every value of the kind.
    const now = ownKeys(entry.object);
    for (let k = 0; k < now.length; k++) {
      const key = now[k]!;
      if (holds(entry.all, key) || !(holds(HOOK_KEYS, key) || isIndexKey(key))) continue;
      append(changes, { taken: entry, key, at: -1, name: `${entry.name}${keyName(key)}`, core: true });
    }
  }
  return changes;
}

/** What one look of the main thread's guard found and put back. */
export interface BuiltinsTakenBack {
  /** Core built-ins replaced, removed or given a hook key, named as `JSON.parse`. */
  changed: string[];
  /** Of those, what could not be put back (made not configurable, or its object frozen). */
  kept: string[];
}

/**
 * The main thread's guard of the language's own built-ins (docs/containment.md, "Loading"): taken
 * before any capability file is imported; `takeBack()` puts back every core one a file's code
 * replaced, removed or gave a hook key since — only on the main thread (`if (isMainThread)`),
 * after its trial (a timer, a package's), or put back before the trial ended, which no trial sees
 * — and answers what it found (null: nothing). Looked at after each import and every second.
 */
export function builtinsGuard(): { takeBack(): BuiltinsTakenBack | null } {
  const taken = takeBuiltins();
  return {
    takeBack() {
      const found = changedBuiltins(taken);
      const changed: string[] = [];
      const kept: string[] = [];
      for (let i = 0; i < found.length; i++) {
        const change = found[i]!;
        if (!change.core) continue;
        append(changed, change.name);
        const done = change.at === -1 ? deleteProperty(change.taken.object, change.key) : defineProperty(change.taken.object, change.key, change.taken.descriptors[change.at]!);
        if (!done) append(kept, change.name);
      }
      return changed.length === 0 ? null : { changed, kept };
    },
  };
}

/**
 * The warning a main thread's look logs (boot.ts, cli/_load-registry.ts): `who` replaced what
 * `changed` names, `when`, and what of it (`kept`) could not be put back.
 */
export function builtinsWarning(who: string, when: string, changed: string[], kept: string[], named: (keys: string[]) => string): string {
  const left = kept.length === 0 ? "docket put them back" : `docket could not put back ${named(kept)} (made not configurable, or its object frozen): the process runs with it until it ends; remove the file and restart`;
  return `warning: ${who} replaced ${named(changed)} on docket's main thread ${when}, which docket's own code calls; ${left}. Leave the runtime's built-ins as they are.`;
}

// The prototypes every object of a worker's thread shares, as the worker began, taken back after
// each task (docs/containment.md, "Loading" and the handler's part after it): what a handler adds
// or replaces there — a naive deep merge of an input holding "__proto__" does — never reaches the
// next task, of any capability, on that worker.

/** What one look found changed, by key, and what could not be put back (a key defined as not configurable, a prototype frozen). */
export interface PrototypeChanges {
  /** Keys added, replaced or removed, named as `Object.prototype.debug`. */
  changed: string[];
  /** Those that stay: defined as not configurable, or on a prototype made non-extensible. */
  kept: string[];
}

/** One prototype looked at whole: every key and what it holds. */
interface Whole {
  name: string;
  target: Record<PropertyKey, unknown>;
  /** What it inherits from (Object.prototype: null): set to another, every object meets that one's keys. */
  parent: object | null;
  original: Map<PropertyKey, PropertyDescriptor>;
  /** Data keys, read by value (cheap); accessors (`__proto__`, `caller`), by descriptor. */
  values: Array<readonly [PropertyKey, unknown]>;
  accessors: Array<[PropertyKey, PropertyDescriptor]>;
  extensible: boolean;
}

function taken(name: string, target: object): Whole {
  const whole: Whole = { name, target: target as Record<PropertyKey, unknown>, parent: Object.getPrototypeOf(target), original: new Map(), values: [], accessors: [], extensible: true };
  retake(whole);
  return whole;
}

/** Takes the prototype as it is now: what stays after a look is the worker's from then on. */
function retake(whole: Whole): void {
  whole.original.clear();
  for (const key of Reflect.ownKeys(whole.target)) whole.original.set(key, Reflect.getOwnPropertyDescriptor(whole.target, key)!);
  whole.values = [...whole.original].filter(([, d]) => "value" in d).map(([key, d]) => [key, d.value] as const);
  whole.accessors = [...whole.original].filter(([, d]) => !("value" in d));
  whole.extensible = Object.isExtensible(whole.target);
}

/** Keys JSON, `await` and conversions ask every value for. */
const HOOKS: readonly PropertyKey[] = ["toJSON", "then", Symbol.toPrimitive];

/**
 * The prototypes other than Object's and Function's whose values a later task's output, failure
 * or log meets (an array or a Date in an output, an Error in a message), and the keys JSON and
 * conversions ask them for, however they were defined (not enumerable, which for…in does not
 * meet): an Array.prototype.toJSON, then a Date.prototype.toJSON, wrote one task's secret into
 * every later task's output on the worker (second and third checking testers, session 45).
 * Looked at by value, as read (a few ns each), not by descriptor.
 */
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
const HOOKED: ReadonlyArray<readonly [name: string, target: object, keys: readonly PropertyKey[]]> = [
  ["Array", Array.prototype, HOOKS],
  ["String", String.prototype, HOOKS],
  ["Number", Number.prototype, HOOKS],
  ["Boolean", Boolean.prototype, HOOKS],
  ["Date", Date.prototype, [...HOOKS, "toString"]],
  ["Error", Error.prototype, [...HOOKS, "toString", "name", "message"]],
  ["RegExp", RegExp.prototype, [...HOOKS, "toString"]],
  ["Map", Map.prototype, HOOKS],
  ["Set", Set.prototype, HOOKS],
  ["Promise", Promise.prototype, ["toJSON", Symbol.toPrimitive]],
  ["%TypedArray%", TypedArrayPrototype, [...HOOKS, "toString"]],
  ["ArrayBuffer", ArrayBuffer.prototype, HOOKS],
  ["Symbol", Symbol.prototype, ["toJSON", "then", "toString"]],
  ["BigInt", BigInt.prototype, [...HOOKS, "toString"]],
  ...(typeof URL === "function" ? [["URL", URL.prototype, [...HOOKS, "toString"]] as const] : []),
];

/**
 * Takes Object.prototype and Function.prototype as they are now (every key, and what each holds),
 * and the for…in keys of the other shared prototypes. `takeBack()` then removes what was added,
 * puts back what was replaced or removed, and answers what it found (null: nothing). It costs
 * under a microsecond when nothing changed: it runs twice per task. On Array, String, Number and
 * Boolean prototypes only keys a `for…in` meets are seen (what an assignment adds) — listing their
 * keys takes microseconds each, and a method of theirs replaced is not seen.
 */
export function sharedPrototypes(): { takeBack(): PrototypeChanges | null } {
  const wholes = [taken("Object", Object.prototype), taken("Function", Function.prototype)];
  /** Keys that could not be taken back, by name: the worker's from then on. */
  const stays = new Set<string>();
  // A sample of each kind: a for…in over it meets the enumerable keys its prototype gained.
  const samples: Array<[name: string, proto: object, sample: unknown]> = [
    ["Array", Array.prototype, []],
    ["String", String.prototype, ""],
    ["Number", Number.prototype, 0],
    ["Boolean", Boolean.prototype, false],
  ];
  // What each inherits from (Object.prototype): `Object.setPrototypeOf(Array.prototype, …)` gives every array other keys.
  const parents = samples.map(([, proto]) => Object.getPrototypeOf(proto) as object | null);
  // Each hooked key as it read when the worker began, and its own descriptor then (none: inherited).
  const hooked = HOOKED.flatMap(([name, target, keys]) =>
    keys.map((key) => ({ name, target, key, value: (target as Record<PropertyKey, unknown>)[key], own: Reflect.getOwnPropertyDescriptor(target, key) })),
  );

  return {
    takeBack() {
      const changed: string[] = [];
      const kept: string[] = [];
      const named = (proto: string, key: PropertyKey) => `${proto}.prototype${typeof key === "symbol" ? `[${key.toString()}]` : `.${String(key)}`}`;
      const restore = (proto: string, target: object, key: PropertyKey, descriptor: PropertyDescriptor | undefined) => {
        changed.push(named(proto, key));
        const done = descriptor === undefined ? Reflect.deleteProperty(target, key) : Reflect.defineProperty(target, key, descriptor);
        if (!done) kept.push(named(proto, key));
      };
      let stay = false;
      const reparent = (proto: string, target: object, parent: object | null) => {
        changed.push(`${proto}.prototype's prototype`);
        if (!Reflect.setPrototypeOf(target, parent)) kept.push(`${proto}.prototype's prototype`);
      };
      samples.forEach(([proto, target], i) => {
        if (Object.getPrototypeOf(target) !== parents[i]) reparent(proto, target, parents[i]!);
      });
      for (const whole of wholes) {
        const { name, target, original } = whole;
        if (Object.getPrototypeOf(target) !== whole.parent) reparent(name, target, whole.parent);
        // Removed or replaced first (a key removed reads as the one it inherits, never the same
        // value): then every original key is there, and the count tells whether any was added, also
        // when a key was removed and another added (checking tester).
        for (const [key, value] of whole.values) if (readsOtherThan(target, key, value)) restore(name, target, key, original.get(key));
        for (const [key, d] of whole.accessors) {
          const now = Reflect.getOwnPropertyDescriptor(target, key);
          if (now?.get !== d.get || now?.set !== d.set) restore(name, target, key, d);
        }
        const keys = Reflect.ownKeys(target);
        if (keys.length !== original.size) for (const key of keys) if (!original.has(key)) restore(name, target, key, undefined);
        if (whole.extensible && !Object.isExtensible(target)) {
          // Frozen, sealed or made non-extensible: nothing makes it extensible again.
          changed.push(`${name}.prototype (frozen or sealed)`);
          kept.push(`${name}.prototype (frozen or sealed)`);
        }
      }
      for (const [proto, target, sample] of samples) {
        for (const key in sample as object) if (Object.hasOwn(target, key) && !stays.has(named(proto, key))) restore(proto, target, key, undefined);
      }
      for (const hook of hooked) {
        if (readsOtherThan(hook.target as Record<PropertyKey, unknown>, hook.key, hook.value) && !stays.has(named(hook.name, hook.key))) restore(hook.name, hook.target, hook.key, hook.own);
      }
      if (changed.length === 0) return null;
      if (kept.length > 0) {
        // What stays is taken as the worker's from now on: said once, not after every task.
        for (const key of kept) stays.add(key);
        stay = true;
      }
      if (stay) for (const whole of wholes) retake(whole);
      return { changed, kept };
    },
  };
}

/**
 * Whether `target[key]` reads as anything but `value`: a key replaced by a getter that throws
 * (or made an accessor) counts as replaced, and never throws out of the look (third checking
 * tester: it hung the task whose end looked).
 */
function readsOtherThan(target: Record<PropertyKey, unknown>, key: PropertyKey, value: unknown): boolean {
  try {
    return target[key] !== value;
  } catch {
    return true;
  }
}

/** Changed keys as a log line or a load error names them: the first three, and how many more. */
export function namedChanges(keys: string[]): string {
  return `${keys.slice(0, 3).join(", ")}${keys.length > 3 ? ` and ${keys.length - 3} more` : ""}`;
}

// The prototypes every object of a worker's thread shares, as the worker began, taken back after
// each task (docs/containment.md, "Object.prototype"): what a handler adds or replaces there —
// a naive deep merge of an input holding "__proto__" does — never reaches the next task, of any
// capability, on that worker.

/** What one look found changed, by key, and what could not be put back (a key defined as not configurable). */
export interface PrototypeChanges {
  /** Keys added or replaced, named as `Object.prototype.debug`. */
  changed: string[];
  /** Those that stay: defined as not configurable, they cannot be removed or put back. */
  kept: string[];
}

/**
 * Takes Object.prototype as it is now (every key, and what each holds), and the keys the other
 * shared prototypes have. `takeBack()` then removes what was added, puts back what was replaced,
 * and answers what it found (null: nothing). It costs under a microsecond when nothing changed:
 * it runs twice per task. Object.prototype and Function.prototype are looked at whole; on Array,
 * String, Number and Boolean prototypes only keys a `for…in` meets (what an assignment adds) —
 * listing their keys takes microseconds each, and a method of theirs replaced is not seen.
 */
export function sharedPrototypes(): { takeBack(): PrototypeChanges | null } {
  const object = Object.prototype as Record<PropertyKey, unknown>;
  const original = new Map<PropertyKey, PropertyDescriptor>();
  for (const key of Reflect.ownKeys(object)) original.set(key, Reflect.getOwnPropertyDescriptor(object, key)!);
  // The data keys, read by value (cheap); the accessors (__proto__), by descriptor.
  let values: Array<readonly [PropertyKey, unknown]> = [];
  let accessors: Array<[PropertyKey, PropertyDescriptor]> = [];
  const split = () => {
    values = [...original].filter(([, d]) => "value" in d).map(([key, d]) => [key, d.value] as const);
    accessors = [...original].filter(([, d]) => !("value" in d));
  };
  split();
  let functionKeys = new Set(Reflect.ownKeys(Function.prototype));
  /** Keys that could not be taken back, by name: the worker's from then on. */
  const stays = new Set<string>();
  // A sample of each kind: a for…in over it meets the enumerable keys its prototype gained.
  const samples: Array<[name: string, proto: object, sample: unknown]> = [
    ["Array", Array.prototype, []],
    ["String", String.prototype, ""],
    ["Number", Number.prototype, 0],
    ["Boolean", Boolean.prototype, false],
  ];

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
      const keys = Reflect.ownKeys(object);
      if (keys.length !== original.size) for (const key of keys) if (!original.has(key)) restore("Object", object, key, undefined);
      for (const [key, value] of values) if (object[key] !== value || !Object.hasOwn(object, key)) restore("Object", object, key, original.get(key));
      for (const [key, d] of accessors) {
        const now = Reflect.getOwnPropertyDescriptor(object, key);
        if (now?.get !== d.get || now?.set !== d.set) restore("Object", object, key, d);
      }
      const functionNow = Reflect.ownKeys(Function.prototype);
      if (functionNow.length !== functionKeys.size) for (const key of functionNow) if (!functionKeys.has(key)) restore("Function", Function.prototype, key, undefined);
      for (const [proto, target, sample] of samples) {
        for (const key in sample as object) if (Object.hasOwn(target, key) && !stays.has(named(proto, key))) restore(proto, target, key, undefined);
      }
      if (changed.length === 0) return null;
      if (kept.length > 0) {
        for (const key of kept) stays.add(key);
        // What stays is taken as the worker's from now on: said once, not after every task.
        original.clear();
        for (const key of Reflect.ownKeys(object)) original.set(key, Reflect.getOwnPropertyDescriptor(object, key)!);
        split();
        functionKeys = new Set(Reflect.ownKeys(Function.prototype));
      }
      return { changed, kept };
    },
  };
}

// Whether a value is the JSON it will be stored and sent as, and if not, where and what it is not:
// a handler's output as returned, what a schema transform made of an input or an output.

/** What keeps a value from being plain JSON: nesting (or a cycle) past the bound, or one value JSON would not keep. */
export type PlainJsonProblem = { reason: "too_deep" } | { reason: "not_json"; path: string; what: string };

/** A value as JSON writes it (`value`), or what keeps it from being written as it is. */
export type WrittenJson = { ok: true; value: unknown } | { ok: false; problem: PlainJsonProblem };

/**
 * `value` as JSON writes it, or what keeps it from being plain JSON. Plain: strings, finite
 * numbers, booleans, null, undefined (left out, as JSON does), arrays and plain objects within
 * `max` levels, and a Date. Not: a Map or a Set (JSON writes `{}`), an Infinity or NaN (`null`), a
 * BigInt (JSON throws), a function or a Symbol (left out), a Promise, a class instance — each the
 * JSON of something other than what was made. `path` names where, under `root` (`output.counts`,
 * `output.items[2]`).
 *
 * What has a `toJSON` (other than a Date) is written as JSON writes it: `toJSON(key)` is called
 * and what it returns stands in its place, checked as the rest is (a `toJSON` that returns
 * Infinity or a Map, or throws, is refused at the holder's path). Then `value` is a copy, with no
 * `toJSON` left in it; else it is the value itself. A Date is kept a Date (a schema may take one):
 * JSON writes it by its own `toJSON`, as an ISO string.
 *
 * Runs on every execution's output: one walk with two flat stacks and no allocation per member,
 * so a small output costs next to nothing and a large one about a walk of it. Only once it finds
 * a problem or a `toJSON` does it walk again, with places, for the path or the copy.
 */
export function writtenJson(value: unknown, max: number, root: string): WrittenJson {
  let found: ReturnType<typeof problemKind> | "unreadable";
  let thrown: unknown;
  try {
    found = problemKind(value, max, true);
  } catch (error) {
    // A getter that throws (or a Proxy's trap): the value cannot even be read, let alone written.
    // The walk with places finds which.
    found = "unreadable";
    thrown = error;
  }
  if (found === null) return { ok: true, value };
  if (found === "too_deep") return refused({ reason: "too_deep" });
  try {
    const written = placedWritten(value, max, root, found === "to_json");
    // A value whose getters answer differently the second time may hide a problem from the walk
    // with places: its root is named then, never nothing.
    if (!written.ok || found === "to_json") return written;
    return refused({ reason: "not_json", path: root, what: found === "unreadable" ? unreadable(thrown) : "a value JSON cannot hold as it is" });
  } catch (error) {
    return refused({ reason: "not_json", path: root, what: unreadable(error) });
  }
}

/** Thrown by placedWritten's walk past its budget of members. */
const PAST_LIMIT = Symbol("past the limit");

/**
 * The problem placedWritten finds in `value` (within `limit` members), for a better name of one
 * already found at `path` (kept only where it names that path); with no `path`, whatever it finds
 * first. Null when it finds nothing, or throws.
 */
export function namedProblem(value: unknown, max: number, root: string, limit: number, path: string | null): PlainJsonProblem | null {
  try {
    const written = placedWritten(value, max, root, false, limit);
    if (written.ok) return null;
    if (path === null) return written.problem;
    return written.problem.reason === "not_json" && written.problem.path === path ? written.problem : null;
  } catch {
    return null;
  }
}

/** The path of the member reached by `keys` under `root` (a number: an array's index). */
export function pathOfKeys(root: string, keys: ReadonlyArray<string | number>): string {
  let place: Place | null = null;
  for (const key of keys) place = { parent: place, key };
  return pathOf(root, place);
}

/** What keeps `value` from being plain JSON, or null: see {@link writtenJson}, whose copy it does not keep. */
export function plainJsonProblem(value: unknown, max: number, root: string): PlainJsonProblem | null {
  const written = writtenJson(value, max, root);
  return written.ok ? null : written.problem;
}

/**
 * True when `value` is plain JSON within `max` levels, taking what has a `toJSON` as it is and
 * calling none; false when reading it throws. For a value that crosses to a worker by copy, never
 * by JSON (a transformed input), where no `toJSON` is called.
 */
export function isPlainJson(value: unknown, max: number): boolean {
  try {
    return problemKind(value, max, false) === null;
  } catch {
    return false;
  }
}

function refused(problem: PlainJsonProblem): WrittenJson {
  return { ok: false, problem };
}

/** What a value is whose reading threw: the class of what was thrown, never its message (it may hold anything). */
export function unreadable(error: unknown): string {
  return `a value that threw when read (a getter or a Proxy threw ${articled(thrownKind(error))})`;
}

/** The class of what was thrown ("Error", "TypeError"), or its type: a name of letters only, never its message. */
function thrownKind(error: unknown): string {
  const name: unknown = error instanceof Error ? error.name : typeof error;
  return typeof name === "string" && /^[A-Za-z_$][\w$]{0,63}$/.test(name) ? name : "Error";
}

/** "an Error", "a TypeError". */
function articled(name: string): string {
  return `${/^[aeiou]/i.test(name) ? "an" : "a"} ${name}`;
}

/** True for a string, a finite number, a boolean or undefined: JSON writes it as it is (undefined: left out). */
function isPlainPrimitive(item: unknown): boolean {
  switch (typeof item) {
    case "string":
    case "boolean":
    case "undefined":
      return true;
    case "number":
      return Number.isFinite(item);
    default:
      return false;
  }
}

/** An array or a plain object: JSON writes its members, each checked in turn. */
export function isContainer(item: object): boolean {
  if (Array.isArray(item)) return true;
  const proto = Object.getPrototypeOf(item);
  return proto === Object.prototype || proto === null;
}

/** A Date written by Date's own `toJSON`: kept as it is, and JSON writes it as an ISO string (or null). */
function isPlainDate(item: object): boolean {
  return item instanceof Date && (item as { toJSON?: unknown }).toJSON === Date.prototype.toJSON;
}

/** What has a `toJSON` JSON would call (other than a plain Date's). */
function hasToJson(item: object): boolean {
  return typeof (item as { toJSON?: unknown }).toJSON === "function";
}

/** How the walk takes one value: written as it is, a container to walk, one whose `toJSON` JSON calls, or one JSON does not keep. */
const LEAF = 0;
const CONTAINER = 1;
const TO_JSON = 2;
const NOT_JSON = 3;

/** See the constants above. `honour`: false takes what has a `toJSON` as a leaf, and walks a container whatever it has. */
function kindOf(item: unknown, honour: boolean): number {
  if (typeof item !== "object") return isPlainPrimitive(item) ? LEAF : NOT_JSON;
  if (item === null) return LEAF;
  if (isContainer(item)) return honour && hasToJson(item) ? TO_JSON : CONTAINER;
  if (isPlainDate(item)) return LEAF;
  if (hasToJson(item)) return honour ? TO_JSON : LEAF;
  return NOT_JSON;
}

function problemKind(value: unknown, max: number, honour: boolean): "too_deep" | "not_json" | "to_json" | null {
  const kind = kindOf(value, honour);
  if (kind === NOT_JSON) return "not_json";
  if (kind === TO_JSON) return "to_json";
  if (kind === LEAF) return null;
  let toJson = false;
  const containers: object[] = [value as object];
  const depths: number[] = [0];
  while (containers.length > 0) {
    const current = containers.pop()!;
    const depth = depths.pop()!;
    if (depth >= max) return "too_deep";
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const child: unknown = current[i];
        const kind = kindOf(child, honour);
        if (kind === CONTAINER) (containers.push(child as object), depths.push(depth + 1));
        else if (kind === TO_JSON) toJson = true;
        else if (kind === NOT_JSON) return "not_json";
      }
    } else {
      for (const key in current) {
        const child: unknown = (current as Record<string, unknown>)[key];
        const kind = kindOf(child, honour);
        if (kind === CONTAINER) (containers.push(child as object), depths.push(depth + 1));
        else if (kind === TO_JSON) toJson = true;
        else if (kind === NOT_JSON) return "not_json";
      }
    }
  }
  return toJson ? "to_json" : null;
}

/** Where a member sits: its key, under its container's place (null: the root). */
interface Place {
  parent: Place | null;
  key: string | number;
}

/** Thrown by placedWritten's walk at the first problem, to leave every level at once. */
class Refusal {
  constructor(readonly problem: PlainJsonProblem) {}
}

/**
 * The walk of problemKind with places, for the path of what it finds, and (`copy`) building the
 * value as JSON writes it: each `toJSON` called with its key, as JSON.stringify calls it, and what
 * it returns checked in its place. What that returns is written without a second `toJSON` of its
 * own (as JSON does); its members are written as any. A place is made only for a container gone
 * into or a problem named, never per member. Recursive: as deep as `max`, far within the stack.
 */
function placedWritten(value: unknown, max: number, root: string, copy: boolean, budget = Infinity): WrittenJson {
  let members = 0;
  const refuse = (place: Place | null, what: string): never => {
    throw new Refusal({ reason: "not_json", path: pathOf(root, place), what });
  };
  // A member whose getter (or a Proxy's trap) throws is named where it is.
  const read = (container: object, key: string | number, place: Place | null): unknown => {
    try {
      return (container as Record<string | number, unknown>)[key];
    } catch (error) {
      return refuse({ parent: place, key }, unreadable(error));
    }
  };
  // `item` sits at `key` of the container at `parent` (the root: a null key). No closure nor place
  // is made for a member that is written as it is: a million numbers cost a call each.
  const write = (item: unknown, depth: number, parent: Place | null, key: string | number | null): unknown => {
    if (++members > budget) throw PAST_LIMIT;
    if (typeof item !== "object") return isPlainPrimitive(item) ? item : refuse(placeOf(parent, key), whatItIs(item));
    if (item === null) return item;
    let holder: object | null = null;
    if (!isPlainDate(item) && hasToJson(item)) {
      holder = item;
      try {
        item = (item as { toJSON(key: string): unknown }).toJSON(key === null ? "" : String(key));
      } catch (error) {
        refuse(placeOf(parent, key), `${holderName(holder)} whose toJSON() threw ${articled(thrownKind(error))}`);
      }
      if (typeof item !== "object" || item === null) return item === null || isPlainPrimitive(item) ? item : refuse(placeOf(parent, key), returnedBy(holder, whatItIs(item)));
    } else if (isPlainDate(item)) {
      return item;
    }
    if (!isContainer(item)) return refuse(placeOf(parent, key), returnedBy(holder, whatItIs(item)));
    if (depth >= max) throw new Refusal({ reason: "too_deep" });
    const here = placeOf(parent, key);
    if (Array.isArray(item)) {
      const written: unknown[] | null = copy ? new Array(item.length) : null;
      for (let i = 0; i < item.length; i++) {
        const member = write(read(item, i, here), depth + 1, here, i);
        if (written) written[i] = member;
      }
      return written ?? item;
    }
    const written: Record<string, unknown> | null = copy ? {} : null;
    for (const name of Object.keys(item)) {
      const member = write(read(item, name, here), depth + 1, here, name);
      // An own "__proto__" member is data to JSON: assigned, it would set the copy's prototype.
      if (written && name === "__proto__") Object.defineProperty(written, name, { value: member, enumerable: true, writable: true, configurable: true });
      else if (written) written[name] = member;
    }
    return written ?? item;
  };
  try {
    return { ok: true, value: write(value, 0, null, null) };
  } catch (error) {
    if (error instanceof Refusal) return refused(error.problem);
    throw error;
  }
}

/** The place of the member at `key` of the container at `parent`; the root's (a null key) is null. */
function placeOf(parent: Place | null, key: string | number | null): Place | null {
  return key === null ? parent : { parent, key };
}

/** What is at a place: `what`, or, when a toJSON of `holder` returned it, said so. */
function returnedBy(holder: object | null, what: string): string {
  return holder === null ? what : `${holderName(holder)} whose toJSON() returns ${what}`;
}

/** A place as a path like `output.items[3].size`, as schema problems name theirs. */
function pathOf(root: string, place: Place | null): string {
  const keys: Array<string | number> = [];
  for (let at = place; at !== null; at = at.parent) keys.push(at.key);
  let path = root;
  for (const key of keys.reverse()) path += typeof key === "number" ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  return path;
}

/** What a value JSON does not keep is, and what JSON would make of it: "a Map, which JSON writes as {}". */
export function whatItIs(item: unknown): string {
  switch (typeof item) {
    case "number":
      return `${item}, which JSON writes as null`;
    case "bigint":
      return "a BigInt, which JSON cannot write";
    case "function":
      return "a function, which JSON leaves out";
    case "symbol":
      return "a Symbol, which JSON leaves out";
  }
  if (item instanceof Map) return "a Map, which JSON writes as {}";
  if (item instanceof Set) return "a Set, which JSON writes as {}";
  if (item instanceof Promise) return "a Promise (an async function's result, not awaited), which JSON writes as {}";
  return `${className(item as object)} object, not a plain object, which JSON writes as its own fields only`;
}

/** "a Point", "an URL" (as its constructor is named), or "a class" when it has no name to show. */
function className(item: object): string {
  let name: unknown;
  try {
    name = (Object.getPrototypeOf(item) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  } catch {
    name = undefined;
  }
  const shown = typeof name === "string" && /^[A-Za-z_$][\w$]{0,63}$/.test(name) ? name : "class";
  return `${/^[AEIOU]/.test(shown) ? "an" : "a"} ${shown}`;
}

/** What holds a `toJSON`: "an object", "an array", "a Reading object". */
function holderName(holder: object): string {
  if (Array.isArray(holder)) return "an array";
  return isContainer(holder) ? "an object" : `${className(holder)} object`;
}

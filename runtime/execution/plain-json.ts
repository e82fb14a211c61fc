// Whether a value is the JSON it will be stored and sent as, and if not, where and what it is not:
// a handler's output as returned, what a schema transform made of an input or an output.

import { pathStep } from "./json-path.ts";

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

/** A value's JSON text (undefined: JSON writes nothing), or why it has none: over `limit` characters (`at_least`: counted that far), or not plain JSON. */
export type JsonText = { ok: true; text: string | undefined } | { ok: false; over: number } | { ok: false; problem: PlainJsonProblem };

/** JSON's writer as this module found it, before any capability code ran: a handler that replaces JSON.stringify must not write what is stored. */
const stringify = JSON.stringify;

/** JSON.isRawJSON where the runtime has it: a JSON.rawJSON("1") (null-prototype, frozen) is written as its text. */
const isRawJson = (JSON as { isRawJSON?: (value: unknown) => boolean }).isRawJSON;

/** Thrown by jsonText's walk: past its limit, or nested past its depth. */
const PAST_LIMIT = Symbol("past the limit");
const TOO_DEEP = Symbol("too deep");

/**
 * `value`'s JSON text as JSON.stringify writes it, read once: the text is what JSON made of the
 * value as it read it, never a second reading (a getter or a `toJSON` that answers differently the
 * next time, counted, or grown into a value reached on 2^60 paths, would be stored as what no
 * check saw). One JSON.stringify whose replacer sees each value as JSON writes it (after its
 * `toJSON`), checks it as {@link writtenJson} does, bounds its depth by `max`, and counts a lower
 * bound of the characters written, stopping once past `limit`: an output within `limit` is never
 * stopped, a Proxy array of 2^31 members or a value shared on every level is stopped at `limit`.
 * A value that is not plain JSON is measured on (a Map as its entries, a BigInt as its digits):
 * an output both too large and not JSON is refused as too large, as the worker always did.
 * Only after a problem does a second walk (bounded by `limit` too) look for a better name for it:
 * what a `toJSON` returned ("a Reading object whose toJSON() returns Infinity"), kept only where it
 * names the same path the first found.
 */
export function jsonText(value: unknown, max: number, root: string, limit: number): JsonText {
  // The containers JSON is inside, outermost first, and the key each sits at: a member's holder is
  // `this` of the replacer, so popping down to it gives its depth and path, with no allocation per member.
  const holders: object[] = [];
  const keys: string[] = [];
  let size = 0;
  let found: { holders: object[]; keys: string[]; what: string } | null = null;
  const note = (key: string, item: unknown, what: string) => {
    found ??= { holders: [...holders], keys: [...keys, key], what: what || whatItIs(item) };
  };
  let text: string | undefined;
  try {
    text = stringify(value, function (this: object, key: string, item: unknown): unknown {
      while (holders.length > 0 && holders[holders.length - 1] !== this) (holders.pop(), keys.pop());
      // Only the root's holder (JSON's wrapper) is not one of ours. A member of an object costs its
      // key ("key":) when written; an array's commas are not counted (a lower bound).
      const inObject = holders.length > 0 && !Array.isArray(this);
      const inArray = holders.length > 0 && !inObject;
      let written: unknown = item;
      switch (typeof item) {
        case "string":
          size += item.length + 2;
          break;
        case "number":
          size += 1;
          if (!Number.isFinite(item)) note(key, item, "");
          break;
        case "boolean":
          size += 4;
          break;
        case "undefined":
          // Left out of an object, null in an array.
          if (inArray) size += 4;
          break;
        case "bigint":
          note(key, item, "");
          size += item.toString().length;
          written = undefined;
          break;
        case "object":
          if (item === null) {
            size += 4;
            break;
          }
          if (isRawJson?.(item)) {
            // A JSON.rawJSON is written as its text, whose members no replacer sees: counted whole.
            size += (item as { rawJSON: string }).rawJSON.length;
            break;
          }
          if (!isContainer(item)) {
            note(key, item, "");
            if (item instanceof Map || item instanceof Set) written = [...item];
            else if (item instanceof ArrayBuffer) (size += item.byteLength, (written = undefined));
            else if (ArrayBuffer.isView(item)) (size += item.buffer.byteLength, (written = undefined));
          }
          if (written !== undefined) {
            if (holders.length >= max) throw TOO_DEEP;
            size += 2;
            holders.push(written as object);
            keys.push(key);
          }
          break;
        default:
          // A function or a Symbol: JSON leaves it out of an object, and writes null in an array
          // (counted, so that a Proxy array claiming 2^31 of them stops at the limit too).
          note(key, item, "");
          if (inArray) size += 4;
          written = undefined;
      }
      if (inObject && written !== undefined) size += key.length + 3;
      if (size > limit) throw PAST_LIMIT;
      return written;
    });
  } catch (error) {
    if (error === PAST_LIMIT || size > limit) return { ok: false, over: size };
    if (error === TOO_DEEP) return { ok: false, problem: { reason: "too_deep" } };
    // A getter, a toJSON or a Proxy's trap threw, or JSON met a cycle: the walk with places says
    // which; if its second reading finds nothing, the member being read is named.
    return { ok: false, problem: secondLook(value, max, root, limit, null) ?? { reason: "not_json", path: pathOfKeys(root, holders, keys), what: unreadable(error) } };
  }
  if (found === null) return { ok: true, text };
  const first: { holders: object[]; keys: string[]; what: string } = found;
  const path = pathOfKeys(root, first.holders, first.keys);
  return { ok: false, problem: secondLook(value, max, root, limit, path) ?? { reason: "not_json", path, what: first.what } };
}

/** What placedWritten finds (only where it names `path`, when one is given), within `limit` members; null when it finds nothing, or throws. */
function secondLook(value: unknown, max: number, root: string, limit: number, path: string | null): PlainJsonProblem | null {
  try {
    const written = placedWritten(value, max, root, false, limit);
    if (written.ok) return null;
    if (path === null) return written.problem;
    return written.problem.reason === "not_json" && written.problem.path === path ? written.problem : null;
  } catch {
    return null;
  }
}

/** The path of the member at the last of `keys`, each key under the holder before it (the first: the root's own, ""). */
function pathOfKeys(root: string, holders: object[], keys: string[]): string {
  let place: Place | null = null;
  for (let i = 1; i < keys.length; i++) place = { parent: place, key: Array.isArray(holders[i - 1]) ? Number(keys[i]) : keys[i]! };
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
function unreadable(error: unknown): string {
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
function isContainer(item: object): boolean {
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
  for (const key of keys.reverse()) path += pathStep(key);
  return path;
}

/** What a value JSON does not keep is, and what JSON would make of it: "a Map, which JSON writes as {}". */
function whatItIs(item: unknown): string {
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

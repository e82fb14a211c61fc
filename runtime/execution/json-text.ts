// A handler's returned output written as JSON text in its worker, read once, checked as it is read.
import { isContainer, namedProblem, pathOfKeys, unreadable, whatItIs, type PlainJsonProblem } from "./plain-json.ts";

/** A value's JSON text (undefined: JSON writes nothing), or why it has none: over `limit` characters (`at_least`: counted that far), or not plain JSON. */
export type JsonText = { ok: true; text: string | undefined } | { ok: false; over: number } | { ok: false; problem: PlainJsonProblem };

/** Thrown by the walk: past its limit, or nested past its depth. */
const PAST_LIMIT = Symbol("past the limit");
const TOO_DEEP = Symbol("too deep");

/** Where a value sits, as the walk writes it: the root, a member of an array, a member of an object. */
const AT_ROOT = 0;
const IN_ARRAY = 1;
const IN_OBJECT = 2;

/** JSON.isRawJSON where the runtime has it: a JSON.rawJSON("1") (null-prototype, frozen) is written as its text. */
const isRawJson = (JSON as { isRawJSON?: (value: unknown) => boolean }).isRawJSON;

/**
 * `value`'s JSON text as JSON.stringify writes it, read once: the text is made from what the walk
 * read, never a second reading (a getter or a `toJSON` that answers differently the next time,
 * counted, or grown into a value reached on 2^60 paths, would be stored as what no check saw).
 *
 * One walk in JSON.stringify's order reads each member once, as JSON reads it (a Proxy's traps
 * run as they would for JSON: its `toJSON`, then its keys, then each member), calls each `toJSON`
 * once with its key, checks what it has as writtenJson (plain-json.ts) does, bounds its depth by
 * `max`, and counts a lower bound of the characters written, stopping once past `limit`: an output
 * within `limit` is never stopped, a Proxy array of 2^31 members (numbers, or functions JSON
 * writes as null) or a value shared on every level is stopped at `limit`. What it read it copies
 * into arrays and prototype-less objects, which JSON.stringify then writes without a replacer:
 * nothing of the handler's is called or read again, and no JS function is called per value (a
 * replacer is, which made writing several times as slow: bench/json-text.ts). A value that is not
 * plain JSON is measured on as JSON would write it (a Map as its entries, a BigInt as its digits,
 * a class instance as its own fields): an output both too large and not JSON is refused as too
 * large, as the worker always did. Only after a problem does a second walk (bounded by `limit`
 * too) look for a better name for it: what a `toJSON` returned ("a Reading object whose toJSON()
 * returns Infinity"), kept only where it names the same path the first found.
 */
export function jsonText(value: unknown, max: number, root: string, limit: number): JsonText {
  const walk = new Walk(max, root, limit);
  let copy: unknown;
  try {
    copy = walk.write(value, "", AT_ROOT);
  } catch (error) {
    if (error === PAST_LIMIT || walk.size > limit) return { ok: false, over: walk.size };
    if (error === TOO_DEEP) return { ok: false, problem: { reason: "too_deep" } };
    // A getter, a toJSON or a Proxy's trap threw, or the value holds itself: the walk with places
    // says which; if its second reading finds nothing, the member being read is named.
    return { ok: false, problem: namedProblem(value, max, root, limit, null) ?? { reason: "not_json", path: walk.pathOf(walk.reading), what: unreadable(error) } };
  }
  const found = walk.found;
  if (found === null) return { ok: true, text: textOf(copy) };
  return { ok: false, problem: namedProblem(value, max, root, limit, found.path) ?? { reason: "not_json", path: found.path, what: found.what } };
}

/**
 * The JSON text of a copy the walk made. JSON.stringify looks up `toJSON` on each object it
 * writes: the copy's objects have no prototype, and its arrays Array.prototype, where a handler
 * (or a library it loads, as Prototype.js did) may have put a `toJSON`, already called by the walk
 * where JSON calls it: then the arrays are given no prototype either, so that it is not called
 * again (a copy made so writes twice as slowly, so only then).
 */
function textOf(copy: unknown): string | undefined {
  if (Object.hasOwn(Array.prototype, "toJSON") || Object.hasOwn(Object.prototype, "toJSON") || Object.getPrototypeOf(Array.prototype) !== Object.prototype) orphan(copy);
  return JSON.stringify(copy);
}

/** Takes the prototype off every array of a copy the walk made (all its own). */
function orphan(copy: unknown): void {
  if (typeof copy !== "object" || copy === null) return;
  if (!Array.isArray(copy)) {
    for (const member of Object.values(copy)) orphan(member);
    return;
  }
  Object.setPrototypeOf(copy, null);
  for (let i = 0; i < copy.length; i++) orphan(copy[i]);
}

/** One walk of jsonText: what it counted and found so far, and where it is. */
class Walk {
  /** A lower bound of the characters written so far. */
  size = 0;
  /** The first value JSON would not write as it is. */
  found: { path: string; what: string } | null = null;
  /** The key of the member being read in the innermost container (null: the root). */
  reading: string | number | null = null;
  // The containers being written, outermost first, and the key each sits at (the root's: "").
  private readonly holders: object[] = [];
  private readonly keys: Array<string | number> = [];

  constructor(
    private readonly max: number,
    private readonly root: string,
    private readonly limit: number,
  ) {}

  /**
   * What JSON writes for `item`, read at `key` of the innermost container (`at`), as a copy: a
   * primitive as it is, a container copied, undefined where JSON writes nothing (an object leaves
   * the member out, an array writes null). Its size is counted before its members are read, so
   * that a container past the limit is not walked into: a member of an object costs its key
   * ("key":) when written; an array's commas are not counted (a lower bound).
   */
  write(item: unknown, key: string | number, at: number): unknown {
    if (typeof item === "object" ? item !== null : typeof item === "bigint") {
      const toJson: unknown = (item as { toJSON?: unknown }).toJSON;
      if (typeof toJson === "function") item = toJson.call(item, typeof key === "number" ? String(key) : key);
    }
    let written: unknown = item;
    switch (typeof item) {
      case "string":
        this.size += item.length + 2;
        break;
      case "number":
        this.size += 1;
        if (!Number.isFinite(item)) this.note(key, item);
        break;
      case "boolean":
        this.size += 4;
        break;
      case "undefined":
        if (at === IN_ARRAY) this.size += 4;
        break;
      case "bigint":
        this.note(key, item);
        this.size += item.toString().length;
        written = undefined;
        break;
      case "object":
        if (item === null) {
          this.size += 4;
          break;
        }
        // Its own size and key are counted, and the limit checked, before its members.
        return this.object(item, key, at);
      default:
        // A function or a Symbol: JSON leaves it out of an object, and writes null in an array
        // (counted, so that a Proxy array of 2^31 functions is stopped at the limit too).
        this.note(key, item);
        if (at === IN_ARRAY) this.size += 4;
        written = undefined;
    }
    if (at === IN_OBJECT && written !== undefined) this.size += (key as string).length + 3;
    if (this.size > this.limit) throw PAST_LIMIT;
    return written;
  }

  /** An object's copy: a container's members, each written in turn; what is not plain JSON noted, and measured as JSON writes it. */
  private object(item: object, key: string | number, at: number): unknown {
    let container: object | undefined = item;
    const plain = isContainer(item);
    if (!plain) {
      this.note(key, item);
      if (item instanceof Map || item instanceof Set) container = [...item];
      else if (item instanceof ArrayBuffer) ((this.size += item.byteLength), (container = undefined));
      else if (ArrayBuffer.isView(item)) ((this.size += item.buffer.byteLength), (container = undefined));
    }
    if (container === undefined) {
      if (this.size > this.limit) throw PAST_LIMIT;
      return undefined;
    }
    if (this.holders.length >= this.max) throw TOO_DEEP;
    this.size += at === IN_OBJECT ? (key as string).length + 5 : 2;
    if (this.size > this.limit) throw PAST_LIMIT;
    // What JSON writes without walking it: a JSON.rawJSON text as it is (kept: frozen, it holds
    // nothing of the handler's to call); a `new String` or the like as its primitive (nothing of
    // a value already noted is written), a `new Object(1n)` not at all.
    if (!plain && container === item) {
      const primitive = wrapped(item);
      if (primitive !== undefined) return typeof primitive === "bigint" ? cannotWrite() : null;
    }
    if (plain && isRawJson !== undefined && Object.getPrototypeOf(item) === null && isRawJson(item)) return item;
    // As JSON does: a container inside itself is a cycle (which the walk with places names too deep).
    // A loop, not holders.includes: a call per container cost about a tenth of the walk.
    for (let i = this.holders.length - 1; i >= 0; i--) if (this.holders[i] === container) return cannotWrite();
    if (Array.isArray(container)) {
      const length = lengthOf((container as unknown[]).length);
      this.holders.push(container);
      this.keys.push(key);
      const copy: unknown[] = [];
      for (let i = 0; i < length; i++) {
        this.reading = i;
        copy.push(this.write((container as unknown[])[i], i, IN_ARRAY));
      }
      this.holders.pop();
      this.keys.pop();
      return copy;
    }
    const names = Object.keys(container);
    this.holders.push(container);
    this.keys.push(key);
    // No prototype: no setter of Object.prototype is called by a member's name (an own
    // "__proto__" is a member like any), and JSON finds no `toJSON` on it.
    const copy: Record<string, unknown> = Object.create(null);
    for (const name of names) {
      this.reading = name;
      const member = this.write((container as Record<string, unknown>)[name], name, IN_OBJECT);
      if (member !== undefined) copy[name] = member;
    }
    this.holders.pop();
    this.keys.pop();
    return copy;
  }

  /** Keeps the first value JSON would not write as it is, at `key` of the innermost container. */
  private note(key: string | number, item: unknown): void {
    this.found ??= { path: this.pathOf(this.holders.length === 0 ? null : key), what: whatItIs(item) };
  }

  /** The path of the member at `key` of the innermost container (null: the innermost container's own). */
  pathOf(key: string | number | null): string {
    const keys = this.keys.slice(1);
    if (key !== null && this.holders.length > 0) keys.push(key);
    return pathOfKeys(this.root, keys);
  }
}

/** An array's length as JSON reads it (ToLength): a Proxy may say anything. */
function lengthOf(length: unknown): number {
  if (typeof length === "number" && length >= 0 && length <= 2 ** 32) return Math.trunc(length);
  const n = Math.trunc(Number(length));
  return n > 0 ? Math.min(n, Number.MAX_SAFE_INTEGER) : 0;
}

/** The primitive a `new String`, `new Number`, `new Boolean` or `Object(1n)` holds, as JSON unwraps it; else undefined. */
function wrapped(item: object): unknown {
  // Tried only on what looks like one: a class instance is not made to throw four times.
  if (!(item instanceof String || item instanceof Number || item instanceof Boolean || item instanceof BigInt)) return undefined;
  for (const unwrap of [String.prototype.valueOf, Number.prototype.valueOf, Boolean.prototype.valueOf, BigInt.prototype.valueOf] as Array<(this: object) => unknown>) {
    try {
      return unwrap.call(item);
    } catch {
      // Not this kind of wrapper.
    }
  }
  return undefined;
}

/** What JSON.stringify throws for a value it cannot write (a BigInt, a cycle). */
function cannotWrite(): never {
  throw new TypeError("JSON cannot write this value");
}

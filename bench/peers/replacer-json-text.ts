// The baseline of bench/json-text.ts: jsonText as it was before runtime/execution/json-text.ts,
// one JSON.stringify whose replacer checks and counts each value (a JS call per value), kept here
// verbatim so that the bench measures both in one run.
import { isContainer, namedProblem, pathOfKeys, unreadable, whatItIs } from "../../runtime/execution/plain-json.ts";
import type { JsonText } from "../../runtime/execution/json-text.ts";

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
export function replacerJsonText(value: unknown, max: number, root: string, limit: number): JsonText {
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
    text = JSON.stringify(value, function (this: object, key: string, item: unknown): unknown {
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
          // A function or a Symbol: JSON leaves it out.
          note(key, item, "");
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
    return { ok: false, problem: namedProblem(value, max, root, limit, null) ?? { reason: "not_json", path: holderPath(root, holders, keys), what: unreadable(error) } };
  }
  if (found === null) return { ok: true, text };
  const first: { holders: object[]; keys: string[]; what: string } = found;
  const path = holderPath(root, first.holders, first.keys);
  return { ok: false, problem: namedProblem(value, max, root, limit, path) ?? { reason: "not_json", path, what: first.what } };
}

/** The path of the member at the last of `keys`, each key under the holder before it (the first: the root's own, ""). */
function holderPath(root: string, holders: object[], keys: string[]): string {
  return pathOfKeys(root, keys.slice(1).map((key, i) => (Array.isArray(holders[i]) ? Number(key) : key)));
}

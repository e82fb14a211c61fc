// How large an output is, measured in the handler's worker against `output_bytes` (docs/limits.md),
// so that an oversized one never crosses to the main thread.

/**
 * The characters of JSON of an output past `limit`, or null when within it. A message already
 * JSON is measured as it is, the outcome's envelope with it (some 40 characters): no output is
 * serialized twice unless it is over. One JSON cannot hold as it is (a Map, a BigInt, a cycle),
 * which would cross by structured clone, is measured by a walk that stops once past the limit:
 * its JSON would say nothing of a Map's entries, and throw for a BigInt after building most of it.
 */
export function outputOver(wire: unknown, output: unknown, limit: number): { bytes: number; at_least: boolean } | null {
  if (typeof wire === "string") {
    if (wire.length <= limit) return null;
    const size = JSON.stringify(output)?.length ?? 0;
    return size > limit ? { bytes: size, at_least: false } : null;
  }
  // The walk stops just past the limit: what it counted is where it stopped, not the size.
  const size = writtenSize(output, limit);
  return size > limit ? { bytes: size, at_least: true } : null;
}

/** Thrown by writtenSize's walk once past its limit. */
const PAST = Symbol("past the limit");

/**
 * About the characters the main thread would write for a value (its JSON, a Map and a Set by their
 * entries, a BigInt by its digits), counted as JSON.stringify walks it: a value reached twice is
 * written twice, and a sparse array's holes each as null. A typed array counts its whole buffer,
 * which structured clone copies. Stops just past `limit`. A cycle (which JSON cannot write, while
 * a clone can) falls back to counting each object once.
 */
function writtenSize(value: unknown, limit: number): number {
  let size = 0;
  try {
    JSON.stringify(value, function (key: string, item: unknown) {
      size += key.length + 4;
      if (size > limit) throw PAST;
      if (typeof item === "string") size += item.length;
      else if (typeof item === "bigint") return (size += item.toString().length), null;
      else if (item instanceof ArrayBuffer) return (size += item.byteLength), null;
      else if (ArrayBuffer.isView(item)) return (size += item.buffer.byteLength), null;
      else if (item instanceof Map) return [...item];
      else if (item instanceof Set) return [...item];
      if (size > limit) throw PAST;
      return item;
    });
  } catch (error) {
    if (error !== PAST) return approximateSize(value, limit);
  }
  return size;
}

/**
 * About the characters a value takes written out (JSON-like, Maps and Sets by their entries, typed
 * arrays by their bytes), each object counted once; stops counting soon after `limit`.
 */
function approximateSize(value: unknown, limit: number): number {
  let size = 0;
  const seen = new Set<object>();
  const stack: unknown[] = [value];
  while (stack.length > 0 && size <= limit) {
    const item = stack.pop();
    if (typeof item === "string") size += item.length + 2;
    else if (typeof item === "bigint") size += item.toString().length;
    else if (item === null || typeof item !== "object") size += 5;
    else if (!seen.has(item)) {
      seen.add(item);
      if (ArrayBuffer.isView(item)) size += item.buffer.byteLength;
      else if (item instanceof ArrayBuffer) size += item.byteLength;
      else if (item instanceof Date) size += 26;
      else {
        // Entries pushed as they are counted, so that one huge Map or object stops the walk too.
        const entries: Iterable<unknown[]> = item instanceof Map ? item : item instanceof Set ? [...item].map((entry) => [entry]) : Object.entries(item);
        for (const entry of entries) {
          if (size > limit) break;
          stack.push(...entry);
          size += item instanceof Map ? 2 : item instanceof Set ? 1 : String(entry[0]).length + 4;
        }
      }
    }
  }
  return size;
}

/** How deep an input may nest: far beyond any schema a person writes, far below a stack overflow. */
export const MAX_INPUT_DEPTH = 128;

/**
 * True when `value` nests objects or arrays deeper than `max`. Iterative, so a hostile
 * 100,000-level document is measured without recursion (JSON.parse accepts it; a recursive
 * JSON.stringify or schema check of it would overflow the stack).
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== "object") continue;
    if (depth >= max) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * What keeps an input from being the JSON it will be stored and shown as, or null: nesting deeper
 * than `max`, or a number JSON cannot hold — `1e309` parses as Infinity, which a `v.number()`
 * schema takes and the handler runs with, while every record of the call (the start answer, the
 * snapshot, `execution.created`) holds `null` in its place. One iterative walk, as nestsDeeperThan.
 */
export function inputShapeProblem(value: unknown, max: number): { reason: "too_deep" } | { reason: "not_finite"; path: string; value: string } | null {
  const stack: Array<[unknown, number, string]> = [[value, 0, ""]];
  while (stack.length > 0) {
    const [current, depth, path] = stack.pop()!;
    if (typeof current === "number") {
      if (!Number.isFinite(current)) return { reason: "not_finite", path: path || "(the input)", value: String(current) };
      continue;
    }
    if (current === null || typeof current !== "object") continue;
    if (depth >= max) return { reason: "too_deep" };
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const child = current[i];
        if (typeof child === "number" || (child !== null && typeof child === "object")) stack.push([child, depth + 1, `${path}[${i}]`]);
      }
    } else {
      for (const key of Object.keys(current)) {
        const child = (current as Record<string, unknown>)[key];
        if (typeof child === "number" || (child !== null && typeof child === "object")) stack.push([child, depth + 1, path === "" ? key : `${path}.${key}`]);
      }
    }
  }
  return null;
}

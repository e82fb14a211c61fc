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

/** How deep an input may nest: far beyond any schema a person writes, far below a stack overflow. */
export const MAX_INPUT_DEPTH = 128;

/**
 * The levels a plane capability's own input may add around an input it carries: a report's run
 * input sits four levels down (`events[i].data.input`), executions.start's one (`input`).
 */
export const PLANE_ENVELOPE_DEPTH = 8;

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

/** Where a member sits: its key, under its container's place (null: the input itself). */
interface Place {
  parent: Place | null;
  key: string | number;
}

/** A place as a path like `items[3].size`; "(the input)" for the input itself. */
function pathOf(place: Place | null): string {
  const keys: Array<string | number> = [];
  for (let at = place; at !== null; at = at.parent) keys.push(at.key);
  let path = "";
  for (const key of keys.reverse()) path += typeof key === "number" ? `[${key}]` : path === "" ? key : `.${key}`;
  return path || "(the input)";
}

/**
 * What keeps an input from being the JSON it will be stored and shown as, or null: nesting deeper
 * than `max`, or a number JSON cannot hold — `1e309` parses as Infinity, which a `v.number()`
 * schema takes and the handler runs with, while every record of the call (the start answer, the
 * snapshot, `execution.created`) holds `null` in its place. One iterative walk, as nestsDeeperThan,
 * that makes a path only for the problem it finds: an input of a million numbers is a million
 * comparisons, not a million strings (it held the main thread over a second per request).
 */
export function inputShapeProblem(value: unknown, max: number): { reason: "too_deep" } | { reason: "not_finite"; path: string; value: string } | null {
  const found = shapeProblemKind(value, max);
  if (found === null) return null;
  if (found === "too_deep") return { reason: "too_deep" };
  // Only now the walk again, with places, for the path of the number.
  return placedShapeProblem(value, max);
}

/**
 * The kind of problem `inputShapeProblem` would find, without the places: two flat stacks, no
 * allocation per container (32,000 arrays nested 120 deep took 0.2 s with a place and a tuple each).
 */
function shapeProblemKind(value: unknown, max: number): "too_deep" | "not_finite" | null {
  if (typeof value === "number") return Number.isFinite(value) ? null : "not_finite";
  if (value === null || typeof value !== "object") return null;
  const containers: object[] = [value];
  const depths: number[] = [0];
  while (containers.length > 0) {
    const current = containers.pop()!;
    const depth = depths.pop()!;
    if (depth >= max) return "too_deep";
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const child: unknown = current[i];
        if (typeof child === "number") {
          if (!Number.isFinite(child)) return "not_finite";
        } else if (child !== null && typeof child === "object") (containers.push(child), depths.push(depth + 1));
      }
    } else {
      for (const key in current) {
        const child: unknown = (current as Record<string, unknown>)[key];
        if (typeof child === "number") {
          if (!Number.isFinite(child)) return "not_finite";
        } else if (child !== null && typeof child === "object") (containers.push(child), depths.push(depth + 1));
      }
    }
  }
  return null;
}

/** The walk of inputShapeProblem with the place of every container, for the path of what it finds. */
function placedShapeProblem(value: unknown, max: number): { reason: "too_deep" } | { reason: "not_finite"; path: string; value: string } | null {
  const notFinite = (place: Place | null, number: number) => ({ reason: "not_finite" as const, path: pathOf(place), value: String(number) });
  if (typeof value === "number") return Number.isFinite(value) ? null : notFinite(null, value);
  if (value === null || typeof value !== "object") return null;
  const stack: Array<[object, number, Place | null]> = [[value, 0, null]];
  while (stack.length > 0) {
    const [current, depth, place] = stack.pop()!;
    if (depth >= max) return { reason: "too_deep" };
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const child: unknown = current[i];
        if (typeof child === "number") {
          if (!Number.isFinite(child)) return notFinite({ parent: place, key: i }, child);
        } else if (child !== null && typeof child === "object") stack.push([child, depth + 1, { parent: place, key: i }]);
      }
    } else {
      for (const key of Object.keys(current)) {
        const child = (current as Record<string, unknown>)[key];
        if (typeof child === "number") {
          if (!Number.isFinite(child)) return notFinite({ parent: place, key }, child);
        } else if (child !== null && typeof child === "object") stack.push([child, depth + 1, { parent: place, key }]);
      }
    }
  }
  return null;
}

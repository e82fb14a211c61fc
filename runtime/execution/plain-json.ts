// Whether a value is the JSON it will be stored and sent as, and if not, where and what it is not:
// a handler's output as returned, what a schema transform made of an input or an output.

/** What keeps a value from being plain JSON: nesting (or a cycle) past the bound, or one value JSON would not keep. */
export type PlainJsonProblem = { reason: "too_deep" } | { reason: "not_json"; path: string; what: string };

/**
 * What keeps `value` from being plain JSON, or null. Plain: strings, finite numbers, booleans,
 * null, undefined (left out, as JSON does), arrays and plain objects within `max` levels, and
 * what says how JSON writes it (a Date's `toJSON`). Not: a Map or a Set (JSON writes `{}`), an
 * Infinity or NaN (`null`), a BigInt (JSON throws), a function or a Symbol (left out), a Promise,
 * a class instance — each the JSON of something other than what was made. `path` names where,
 * under `root` (`output.counts`, `output.items[2]`).
 *
 * Runs on every execution's output: one walk with two flat stacks and no allocation per member,
 * so a small output costs next to nothing and a large one about a walk of it. Only once it finds
 * a problem does it walk again, with places, for the path.
 */
export function plainJsonProblem(value: unknown, max: number, root: string): PlainJsonProblem | null {
  let found: ReturnType<typeof problemKind>;
  try {
    found = problemKind(value, max);
  } catch (error) {
    // A getter that throws (or a Proxy's trap): the value cannot even be read, let alone written.
    return { reason: "not_json", path: root, what: unreadable(error) };
  }
  if (found === null) return null;
  if (found === "too_deep") return { reason: "too_deep" };
  // A value whose getters answer differently the second time may hide it from the walk with
  // places: its root is named then, never nothing.
  try {
    return placedProblem(value, max, root) ?? { reason: "not_json", path: root, what: "a value JSON cannot hold as it is" };
  } catch (error) {
    return { reason: "not_json", path: root, what: unreadable(error) };
  }
}

/** True when `value` is plain JSON within `max` levels (see {@link plainJsonProblem}); false when reading it throws. */
export function isPlainJson(value: unknown, max: number): boolean {
  try {
    return problemKind(value, max) === null;
  } catch {
    return false;
  }
}

/** What a value is whose reading threw: the class of what was thrown, never its message (it may hold anything). */
function unreadable(error: unknown): string {
  const kind = error instanceof Error ? error.name : typeof error;
  return `a value that threw when read (a getter or a Proxy threw ${/^[aeiou]/i.test(kind) ? "an" : "a"} ${kind})`;
}

/** True when JSON writes `item` as it is, apart from the members of an array or plain object, which are checked on their own. */
function isPlainLeaf(item: unknown): boolean {
  switch (typeof item) {
    case "string":
    case "boolean":
    case "undefined":
      return true;
    case "number":
      return Number.isFinite(item);
    case "object":
      return item === null || isContainer(item) || typeof (item as { toJSON?: unknown }).toJSON === "function";
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

function problemKind(value: unknown, max: number): "too_deep" | "not_json" | null {
  if (!isPlainLeaf(value)) return "not_json";
  if (value === null || typeof value !== "object" || !isContainer(value)) return null;
  const containers: object[] = [value];
  const depths: number[] = [0];
  while (containers.length > 0) {
    const current = containers.pop()!;
    const depth = depths.pop()!;
    if (depth >= max) return "too_deep";
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const child: unknown = current[i];
        if (!isPlainLeaf(child)) return "not_json";
        if (child !== null && typeof child === "object" && isContainer(child)) (containers.push(child), depths.push(depth + 1));
      }
    } else {
      for (const key in current) {
        const child: unknown = (current as Record<string, unknown>)[key];
        if (!isPlainLeaf(child)) return "not_json";
        if (child !== null && typeof child === "object" && isContainer(child)) (containers.push(child), depths.push(depth + 1));
      }
    }
  }
  return null;
}

/** Where a member sits: its key, under its container's place (null: the root). */
interface Place {
  parent: Place | null;
  key: string | number;
}

/** The walk of problemKind with the place of every container, for the path of what it finds. */
function placedProblem(value: unknown, max: number, root: string): PlainJsonProblem | null {
  const notJson = (place: Place | null, item: unknown): PlainJsonProblem => ({ reason: "not_json", path: pathOf(root, place), what: whatItIs(item) });
  if (!isPlainLeaf(value)) return notJson(null, value);
  if (value === null || typeof value !== "object" || !isContainer(value)) return null;
  const stack: Array<[object, number, Place | null]> = [[value, 0, null]];
  while (stack.length > 0) {
    const [current, depth, place] = stack.pop()!;
    if (depth >= max) return { reason: "too_deep" };
    const visit = (key: string | number, child: unknown): PlainJsonProblem | null => {
      if (!isPlainLeaf(child)) return notJson({ parent: place, key }, child);
      if (child !== null && typeof child === "object" && isContainer(child)) stack.push([child, depth + 1, { parent: place, key }]);
      return null;
    };
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const problem = visit(i, current[i]);
        if (problem) return problem;
      }
    } else {
      for (const key of Object.keys(current)) {
        const problem = visit(key, (current as Record<string, unknown>)[key]);
        if (problem) return problem;
      }
    }
  }
  return null;
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
  let name: unknown;
  try {
    name = (Object.getPrototypeOf(item) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  } catch {
    name = undefined;
  }
  const shown = typeof name === "string" && /^[A-Za-z_$][\w$]{0,63}$/.test(name) ? name : "class";
  return `${/^[AEIOU]/.test(shown) ? "an" : "a"} ${shown} object, not a plain object, which JSON writes as its own fields only`;
}

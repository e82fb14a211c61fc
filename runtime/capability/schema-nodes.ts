/**
 * Every node of a valibot schema — schemas and the actions of their pipes — each once, read
 * structurally (entries, item, items, options, pipe, wrapped, key, value, rest…), so that no
 * module copy of valibot needs to agree with ours. A lazy schema's getter is called once, without
 * an input (a recursive schema's getter ignores it; one that needs it, or throws, is passed over).
 * At most `limit` nodes: a schema larger than that is not read to its end.
 */
export function* schemaNodes(schema: unknown, limit = 100_000): Generator<Record<string, unknown>> {
  const seen = new Set<object>();
  const stack: unknown[] = [schema];
  while (stack.length > 0 && seen.size < limit) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    const record = node as Record<string, unknown>;
    if (typeof record.kind === "string") yield record;
    if (record.type === "lazy" && typeof record.getter === "function") {
      try {
        stack.push((record.getter as (input: unknown) => unknown)(undefined));
      } catch {
        // A getter that needs its input: what it gives is known only when an input comes.
      }
    }
    for (const [key, value] of Object.entries(record)) {
      if (key !== "~standard" && typeof value === "object" && value !== null) stack.push(value);
    }
  }
}

import type { RegisteredCapability } from "../runtime/capability/registered.ts";

/** The capabilities page's groups: the checkout's own first, docket's built-ins after. */
export interface CapabilityGroups {
  own: RegisteredCapability[];
  builtin: RegisteredCapability[];
  /** How many matched the query, of how many loaded. */
  matched: number;
  total: number;
}

/**
 * The capabilities a query finds (every word, any case, in the id, title or description), the
 * checkout's own before the built-ins, each group by id.
 */
export function searchCapabilities(capabilities: RegisteredCapability[], query: string): CapabilityGroups {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const found = capabilities.filter((c) => {
    const text = `${c.id} ${c.title} ${c.description}`.toLowerCase();
    return words.every((word) => text.includes(word));
  });
  const byId = (a: RegisteredCapability, b: RegisteredCapability) => a.id.localeCompare(b.id);
  return {
    own: found.filter((c) => c.source.kind !== "builtin").sort(byId),
    builtin: found.filter((c) => c.source.kind === "builtin").sort(byId),
    matched: found.length,
    total: capabilities.length,
  };
}

import type { Context } from "hono";

/** What `?section=` asked of a page: null for the whole page, else the names (each once, in order), or the first unknown one. */
export type SectionsAsked<N extends string> = { names: N[] | null } | { unknown: string };

/**
 * Reads `?section=<name>` (repeated): the sections of a page its scripts re-read (refresh.js). A
 * page that can draw them alone answers only those; a name it does not draw is refused, so a
 * misspelt one is a clear 400 rather than a page that silently lacks it.
 */
export function sectionsAsked<N extends string>(c: Context, known: readonly N[]): SectionsAsked<N> {
  const asked = c.req.queries("section") ?? [];
  if (asked.length === 0) return { names: null };
  const unknown = asked.find((name) => !(known as readonly string[]).includes(name));
  if (unknown !== undefined) return { unknown };
  return { names: [...new Set(asked)] as N[] };
}

/** The refusal of an unknown section, in words. */
export function unknownSectionMessage(known: readonly string[], unknown: string): string {
  return `section must be one of ${known.join(", ")}, got ${JSON.stringify(unknown.slice(0, 40))}.`;
}

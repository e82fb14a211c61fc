import type { Context, MiddlewareHandler } from "hono";
import { didYouMeanText } from "../runtime/capability/did-you-mean.ts";
import { problemResponse } from "./problem-response.tsx";
import { queryEncodingRefusal } from "../runtime/server/query-input.ts";

/** The one parameter a page may be given more than once: the sections its scripts re-read (section-query.ts). */
const REPEATABLE = new Set(["section"]);

/**
 * Read before any page: the server's token in a link (the server's guard takes it into a cookie
 * and sends the browser on without it). A server without a token has nothing to take it into:
 * the link still opens its page.
 */
const EVERY_PAGE = new Set(["token"]);

/**
 * Refuses a page's query that names a parameter the page does not read, or gives one it reads
 * once more than once: a 400 page naming it (and the name meant), as the API and `/events`
 * refuse theirs. A misspelt filter (`?State=failed`, `?capabilty=`) answered the whole list,
 * unfiltered, as if it were the filtered one (a tester's finding).
 */
export function takesQuery(root: string, names: readonly string[]): MiddlewareHandler {
  const known = new Set(names);
  return async (c: Context, next) => {
    const url = new URL(c.req.url);
    // A value that is no percent-encoded UTF-8 (`%E0%A4%A`) would be read changed, and shown as a
    // filter nobody chose: refused as the API refuses it (MCP and cockpit tester, session 41).
    const malformed = queryEncodingRefusal(url.search);
    if (malformed) return problemResponse(c, root, { status: 400, title: "Malformed query", message: malformed.message, suggestion: malformed.suggestion });
    const seen = new Set<string>();
    for (const name of url.searchParams.keys()) {
      const shown = JSON.stringify(name.length > 40 ? `${name.slice(0, 37)}...` : name);
      if (EVERY_PAGE.has(name)) continue;
      if (!known.has(name)) {
        const meant = didYouMeanText(name, names);
        const takes = names.length === 0 ? "This page takes no query parameters." : `This page takes ${names.map((n) => JSON.stringify(n)).join(", ")}.`;
        return problemResponse(c, root, { status: 400, title: "Unknown query parameter", message: `This page reads no parameter ${shown}. ${takes}`, suggestion: meant || "Remove it from the address, or use the page's own filters." });
      }
      if (seen.has(name) && !REPEATABLE.has(name)) {
        return problemResponse(c, root, { status: 400, title: "Repeated query parameter", message: `${shown} is given more than once; this page reads one value of it.`, suggestion: "Give it once." });
      }
      seen.add(name);
    }
    await next();
  };
}

import { randomUUID } from "node:crypto";

/** A page kept for its GET: the HTML a "Run" answered, its status, and the capability it ran. */
export interface KeptPage {
  html: string;
  status: number;
  capability: string;
}

/** The pages "Run" answered, kept for a while so that a reload reads them instead of running again. */
export interface CallResults {
  /** Keeps `page`; answers the token its GET names (`?result=<token>`), or null for a page larger than all that is kept. */
  keep(page: KeptPage): string | null;
  /** The page kept under `token` for `capability`'s address, or null once it is let go (or never was, or is another's). */
  get(token: string, capability: string): KeptPage | null;
}

/** The query parameter of the GET that reads a kept page: `/cockpit/capabilities/<id>?result=<token>`. */
export const RESULT_QUERY = "result";

/** What the cockpit keeps by default: ten minutes, at most 64 pages and 16 MiB of them. */
export const CALL_RESULT_LIMITS = { ttlMs: 10 * 60_000, maxPages: 64, maxBytes: 16 << 20 };

/**
 * The pages of direct calls ("Run"), each under a random token, for the GET a POST answers with
 * (303, Post/Redirect/Get): a reload, or Back, then reads the page again instead of posting the
 * form again — which ran a write a second time, and sent its secret again (docs/cockpit.md).
 * The page holds no secret (the form never fills one in again). Bounded by age, count and bytes,
 * the oldest let go first; `now` is injected so that tests move time by hand.
 */
export function createCallResults(now: () => number = Date.now, limits = CALL_RESULT_LIMITS): CallResults {
  const pages = new Map<string, KeptPage & { at: number; bytes: number }>();
  let bytes = 0;
  const letGo = (token: string) => {
    const page = pages.get(token);
    if (!page) return;
    pages.delete(token);
    bytes -= page.bytes;
  };
  const expire = () => {
    // Kept in insertion order: the oldest first.
    for (const [token, page] of pages) {
      if (now() - page.at < limits.ttlMs && pages.size <= limits.maxPages && bytes <= limits.maxBytes) break;
      letGo(token);
    }
  };
  return {
    keep(page) {
      const size = page.html.length * 2;
      if (size > limits.maxBytes) return null;
      const token = randomUUID();
      pages.set(token, { ...page, at: now(), bytes: size });
      bytes += size;
      expire();
      return token;
    },
    get(token, capability) {
      expire();
      const page = pages.get(token);
      return page && page.capability === capability ? { html: page.html, status: page.status, capability } : null;
    },
  };
}

import { randomBytes } from "node:crypto";
import type { CANCEL_NOTICES } from "./actions.tsx";
import type { RECONCILE_NOTICES } from "./reconcile-action.tsx";
import type { RELEASE_NOTICES } from "./release-action.tsx";

/** What an execution page can say after its forms, by key. */
export type ExecutionNotice = keyof typeof CANCEL_NOTICES | keyof typeof RELEASE_NOTICES | keyof typeof RECONCILE_NOTICES;

/**
 * The notices an execution page shows after one of its forms (cancel, release, reconcile): each
 * kept under a random token for the page's GET (`?notice=<token>`), so that a notice is shown only
 * when this server gave it, for that execution. A notice named in the link itself
 * (`?notice=released`) was shown to anyone who opened such a link — "their files are deleted"
 * above the files it listed (cockpit testers, session 48). Bounded by age and count, the oldest let
 * go first; `now` is injected so that tests move time by hand.
 */
export interface Notices<K extends string> {
  /** Keeps `key` for `execution`'s page; answers the token its link carries. */
  issue(execution: string, key: K): string;
  /** The notice `token` holds for `execution`, or null once let go (or never given, or another's). */
  read(token: string, execution: string): K | null;
}

/** A token as `issue` makes them: what the page's `notice` parameter must look like. */
export const NOTICE_TOKEN = /^[0-9a-f]{16}$/;

/** How long a notice is kept, and how many at most: a page's redirect reads it at once. */
export const NOTICE_LIMITS = { ttlMs: 10 * 60_000, max: 256 };

export function createNotices<K extends string>(now: () => number = Date.now, limits = NOTICE_LIMITS): Notices<K> {
  const kept = new Map<string, { execution: string; key: K; at: number }>();
  const expire = () => {
    // Kept in insertion order: the oldest first.
    for (const [token, notice] of kept) {
      if (now() - notice.at < limits.ttlMs && kept.size <= limits.max) break;
      kept.delete(token);
    }
  };
  return {
    issue(execution, key) {
      const token = randomBytes(8).toString("hex");
      kept.set(token, { execution, key, at: now() });
      expire();
      return token;
    },
    read(token, execution) {
      expire();
      const notice = kept.get(token);
      return notice !== undefined && notice.execution === execution ? notice.key : null;
    },
  };
}

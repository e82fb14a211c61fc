import type { Context } from "hono";

/**
 * Prepares a request that may take as long as a direct call can (up to `direct_deadline_ms` plus
 * `grace_ms`) and returns the signal that aborts when its client goes away.
 *
 * Bun.serve closes a connection that sent nothing for `idleTimeout` (10 s), also while the app is
 * still computing the answer, which a client sees as an empty reply. The Bun adapter supplies
 * `docketKeepOpen`, which lifts that timer for this one request: the direct call's own deadline
 * bounds it instead (docs/containment.md). Node's server has no such timer on a request being
 * answered, so its adapter supplies nothing.
 */
export function longRequest(c: Context): AbortSignal {
  const keepOpen = (c.env as { docketKeepOpen?: (request: Request) => void } | undefined)?.docketKeepOpen;
  try {
    keepOpen?.(c.req.raw);
  } catch {
    // A request the server no longer knows (its client already left): the signal says so.
  }
  return c.req.raw.signal;
}

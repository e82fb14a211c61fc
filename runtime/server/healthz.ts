import type { ExecutionStore } from "../store/store.ts";

/** What `GET /healthz` answers: 200 `{ok: true}`, or 503 with why the store is not ok. */
export interface HealthzAnswer {
  status: 200 | 503;
  body: { ok: true } | { ok: false; store: { ok: false; reason: string; since: string } };
}

/**
 * Liveness with the one fact a probe needs beyond it: whether the store can write. A store that
 * cannot refuses new executions (docs/limits.md), so a probe sees it not ok — with the store's
 * words, but never the checkout's paths: `/healthz` is open without a token.
 */
export function healthz(store: Pick<ExecutionStore, "storageFault">): HealthzAnswer {
  const fault = store.storageFault();
  if (fault === null) return { status: 200, body: { ok: true } };
  return { status: 503, body: { ok: false, store: { ok: false, reason: withoutPaths(fault.reason), since: fault.since } } };
}

/** An error's words with every absolute path in them replaced by `<path>`, cut to 200 characters. */
export function withoutPaths(reason: string): string {
  return reason.replace(/(^|[\s'"(=])(?:[A-Za-z]:)?[\\/][^\s'"()]*/g, "$1<path>").slice(0, 200);
}

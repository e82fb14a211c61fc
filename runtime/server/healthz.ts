import type { ExecutionStore } from "../store/store.ts";
import type { WorkerFault } from "../worker/task.ts";

/** What `GET /healthz` answers: 200 `{ok: true}`, or 503 with what is not ok. */
export interface HealthzAnswer {
  status: 200 | 503;
  body:
    | { ok: true }
    | {
        ok: false;
        store?: { ok: false; reason: string; since: string };
        workers?: { ok: false; lanes: WorkerFault["lanes"]; reason: string; since: string };
      };
}

/**
 * Liveness with the facts a probe needs beyond it: whether the store can write, and whether each
 * lane has a worker to run on. A store that cannot write refuses new executions, and a lane with
 * no worker fails its tasks at once (docs/limits.md, docs/containment.md): either is not ok — with
 * the words of what failed, but never the checkout's paths: `/healthz` is open without a token.
 */
export function healthz(store: Pick<ExecutionStore, "storageFault">, workers: WorkerFault | null = null): HealthzAnswer {
  const fault = store.storageFault();
  if (fault === null && workers === null) return { status: 200, body: { ok: true } };
  return {
    status: 503,
    body: {
      ok: false,
      ...(fault === null ? {} : { store: { ok: false as const, reason: withoutPaths(fault.reason), since: fault.since } }),
      ...(workers === null ? {} : { workers: { ok: false as const, lanes: workers.lanes, reason: withoutPaths(workers.reason), since: workers.since } }),
    },
  };
}

/** The longest reason `/healthz` quotes: docket's own reasons (with what to do, at their end) fit whole. */
const MAX_REASON = 600;

/**
 * An error's words with every absolute path in them — or `file:` URL — replaced by `<path>`. A
 * path starts after a space, a quote, a bracket, `=`, `:` or `,`. Words past MAX_REASON
 * characters are cut at a space and marked with `…`, never mid-word.
 */
export function withoutPaths(reason: string): string {
  const words = reason.replace(/(^|[\s'"`(\[<=:,])(?:file:\/\/)?(?:[A-Za-z]:)?[\\/][^\s'"`()[\]<>,]*/g, "$1<path>");
  if (words.length <= MAX_REASON) return words;
  const cut = words.slice(0, MAX_REASON - 1);
  const space = cut.lastIndexOf(" ");
  return `${space > MAX_REASON / 2 ? cut.slice(0, space) : cut}…`;
}

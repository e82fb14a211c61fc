import type { Database } from "bun:sqlite";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { Entry } from "./_sqlite-entry.ts";
import type { StoreTables } from "./_sqlite-tables.ts";
import { mayExpire } from "../execution/retention.ts";
import { slimmed } from "./_sqlite-unwritable.ts";

/**
 * A terminal execution's snapshot once its details expired (docs/limits.md, `details_retention_ms`):
 * the identity stays — id, capability, state, actor, times, run_id, request and trace ids, and
 * the failure (small and bounded, and what every surface projects) — while the large fields go:
 * input, output, steps, progress, log and diagnostics (the dropped lines are counted). Its events
 * are gone too: `retained_from` moves past the last one.
 */
export function expiredSnapshot(snapshot: ExecutionSnapshot): ExecutionSnapshot {
  const expired: ExecutionSnapshot = {
    ...slimmed(snapshot),
    input: null,
    retained_from: snapshot.last_sequence + 1,
    truncated: true,
    details_expired: true,
  };
  // A reader of "succeeded" always finds the member; it is null now, like a handler's nothing.
  if (snapshot.state === "succeeded") expired.output = null;
  else delete expired.output;
  return expired;
}

/**
 * Expires, in one transaction, the details of every written execution that finished before
 * `cutoff` (ISO), still has them, and may lose them (mayExpire, retention.ts); answers how many.
 * One whose artifacts are held is passed over before its snapshot is read: most kept ones are
 * those, and each pass looks at them again. The caller writes what is pending first.
 *
 * Memory's entries say which finished when (`finishedAt`), oldest first: the file keeps no index
 * for it, which every commit of a busy store would write a page of (see the schema). A pass
 * looks at every retained execution, once an hour by default.
 */
export function expireFinished(db: Database, tables: StoreTables, entries: ReadonlyMap<string, Entry>, cutoff: string, artifactsHeld: (id: string) => boolean): number {
  const expired: Array<{ entry: Entry; snapshot: ExecutionSnapshot }> = [];
  for (const entry of entries.values()) {
    // A written, finished execution has no live snapshot: the file's is the one to shrink.
    if (entry.finishedAt === null || entry.finishedAt >= cutoff || entry.snapshot !== null || artifactsHeld(entry.id)) continue;
    const written = tables.readSnapshot<ExecutionSnapshot>(entry.order);
    if (written !== null && mayExpire(written, { artifactsHeld: false })) expired.push({ entry, snapshot: expiredSnapshot(written) });
  }
  if (expired.length === 0) return 0;
  db.transaction(() => {
    for (const { entry, snapshot } of expired) tables.expire(entry.order, JSON.stringify(snapshot), snapshot.retained_from);
  })();
  for (const { entry, snapshot } of expired) {
    entry.retainedFrom = entry.stored.retainedFrom = snapshot.retained_from;
    entry.finishedAt = null;
  }
  return expired.length;
}

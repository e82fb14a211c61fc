import { SCHEMA_VERSION, type EventDraft, type ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { Limits } from "../execution/limits.ts";
import type { NewExecution } from "./store.ts";
import { foldEvent } from "./_fold.ts";
import { keep } from "./_kept-values.ts";
import { sanitizeDraft } from "../execution/text-sanitize.ts";
import { boundDraftTexts, type TextLimits } from "../execution/text-limits.ts";

// How every store turns drafts into stored events: one implementation, so both stores number,
// stamp, sanitize and fold alike.

/** ISO timestamps from a clock, formatted once per millisecond (appends come in bursts). */
export function createStamper(clock: () => Date): () => string {
  let stampedMs = Number.NaN;
  let stampedIso = "";
  return () => {
    const now = clock();
    const ms = now.getTime();
    if (ms !== stampedMs) {
      stampedMs = ms;
      stampedIso = now.toISOString();
    }
    return stampedIso;
  };
}

/** The `execution.created` event (always sequence 1) of a snapshot made by `initialSnapshot`. */
export function createdEvent(execution: NewExecution, snapshot: ExecutionSnapshot): ExecutionEvent<"execution.created"> {
  return {
    schema_version: SCHEMA_VERSION,
    event_id: `${execution.id}#1`,
    execution_id: execution.id,
    sequence: 1,
    timestamp: snapshot.created_at,
    type: "execution.created",
    data: {
      capability: execution.capability,
      input: snapshot.input,
      actor: snapshot.actor,
      run_id: execution.run_id,
      session_key: execution.session_key,
      capability_version: snapshot.capability_version,
    },
  };
}

/**
 * The draft as it is kept: sanitized, every text within its byte limit (cut last, so that what is
 * masked before is masked whole), and the rare events that carry values kept as frozen copies.
 */
export function prepareDraft(given: EventDraft, limits: TextLimits): EventDraft {
  const draft = boundDraftTexts(sanitizeDraft(given), limits);
  if (draft.type === "execution.completed" || draft.type === "execution.cancel_requested" || draft.type === "execution.reconciled") return { type: draft.type, data: keep(draft.data) } as EventDraft;
  return draft;
}

/**
 * Numbers drafts densely after the snapshot's last sequence, stamps them (one timestamp for all,
 * or one each), folds each into the snapshot and hands it to `keep` (the store's own retention).
 * Call only after `checkBatch`.
 */
export function numberEvents(id: string, snapshot: ExecutionSnapshot, drafts: EventDraft[], timestamps: string | readonly string[], limits: Limits, keepEvent: (event: ExecutionEvent) => void): ExecutionEvent[] {
  const kept = drafts.map((draft) => prepareDraft(draft, limits));
  const stored: ExecutionEvent[] = new Array(kept.length);
  for (let i = 0; i < kept.length; i++) {
    const draft = kept[i]!;
    const sequence = snapshot.last_sequence + 1;
    const timestamp = typeof timestamps === "string" ? timestamps : timestamps[i]!;
    const event = { schema_version: SCHEMA_VERSION, event_id: `${id}#${sequence}`, execution_id: id, sequence, timestamp, type: draft.type, data: draft.data } as ExecutionEvent;
    keepEvent(event);
    foldEvent(snapshot, event, limits);
    stored[i] = event;
  }
  return stored;
}

import type { ExecutionEvent } from "../execution/protocol.ts";
import type { EventListener, EventsPage, SubscribeOptions, Subscription } from "./store.ts";

/** Where a subscription's replay reads history: the store's own `events` and the ids it holds. */
export interface HistorySource {
  events(id: string, after: number, limit: number): EventsPage | null;
  ids(): Iterable<string>;
}

/** Options of {@link createFanOut}. */
export interface FanOutOptions {
  history: HistorySource;
  /** Told about the first error each subscription's listener throws; default: one line on stderr. */
  onListenerError?: (error: unknown, event: ExecutionEvent) => void;
}

/** The subscriber side of a store: delivery in order, subscribe-then-replay, unsubscribe. */
export interface FanOut {
  /**
   * Hands stored events to the subscribers: right after storing them (memory), or once their
   * write committed (sqlite). `jsons[i]`, when given, is events[i] serialized already.
   */
  publish(events: readonly ExecutionEvent[], jsons?: readonly string[]): void;
  subscribe(options: SubscribeOptions, listener: EventListener): Subscription;
  /** Ends every subscription. */
  close(): void;
}

interface Sub {
  listener: EventListener;
  active: boolean;
  /** Events published up to here were stored before the subscription; the replay covers them (a live subscription has them already). */
  from: number;
  /** Last sequence the replay delivered (or the cursor), per execution; live events at or below it are skipped. */
  cursors: Map<string, number> | null;
  errored: boolean;
}

const REPLAY_PAGE = 1000;

/**
 * Fan-out of stored events (docs/protocol.md "Order and gaps", docs/durability.md). Storage-agnostic: a store calls `publish` with
 * what a reader may see (at once in memory, once committed in sqlite) and gives its history to
 * read — the same view, so that replay and live delivery meet without a gap.
 *
 * Every subscriber sees each execution's events once, in sequence order, because
 * - delivery is a trampoline: events appended by a listener are queued and delivered after the
 *   current event has reached everyone, never in the middle (which would reorder them for the
 *   listeners after it);
 * - a subscription registers first, then replays history in pages until caught up, with
 *   delivery held meanwhile; what the replay already delivered is skipped when the queue
 *   reaches it (per-execution cursor), and what was stored before the subscription is never
 *   delivered live (`from`: the count of events published so far).
 */
export function createFanOut(options: FanOutOptions): FanOut {
  const { history } = options;
  const report = options.onListenerError ?? ((error: unknown, event: ExecutionEvent) => {
    console.error(`docket: an event listener threw on ${event.event_id} (${error instanceof Error ? error.message : String(error)}); further errors of this subscription are not reported`);
  });
  // Arrays are replaced, never changed in place, so a delivery loop in progress is unaffected by
  // a subscribe or an unsubscribe made from inside a listener.
  let allSubs: Sub[] = [];
  const followers = new Map<string, Sub[]>();
  let published = 0;
  // The ordinal of the event being handed out now (while `delivering`): a live subscription made
  // from inside a listener takes the rest of the queue, which nobody before it had.
  let handing = 0;
  let delivering = false;
  const queue: ExecutionEvent[] = [];
  const queueOrdinals: number[] = [];
  const queueJsons: Array<string | undefined> = [];

  function send(sub: Sub, event: ExecutionEvent, json: string | undefined): void {
    try {
      sub.listener(event, json);
    } catch (error) {
      if (!sub.errored) {
        sub.errored = true;
        try {
          report(error, event);
        } catch {
          // A failing reporter must not break delivery either.
        }
      }
    }
  }

  function deliver(event: ExecutionEvent, ordinal: number, json: string | undefined): void {
    handing = ordinal;
    for (const sub of allSubs) {
      if (!sub.active || ordinal <= sub.from) continue;
      if (sub.cursors !== null && event.sequence <= (sub.cursors.get(event.execution_id) ?? 0)) continue;
      send(sub, event, json);
    }
    const named = followers.get(event.execution_id);
    if (named === undefined) return;
    // A replaying subscription's `from` is 0 (its cursors skip what its replay reached); a live
    // one, which replays nothing, is held to its `from` like the subscriptions to all.
    for (const sub of named) {
      if (!sub.active || ordinal <= sub.from || event.sequence <= sub.cursors!.get(event.execution_id)!) continue;
      send(sub, event, json);
    }
  }

  function drain(): void {
    delivering = true;
    try {
      // The queue may grow while it is drained (a listener appends): read its length each turn.
      for (let i = 0; i < queue.length; i++) deliver(queue[i]!, queueOrdinals[i]!, queueJsons[i]);
    } finally {
      queue.length = 0;
      queueOrdinals.length = 0;
      queueJsons.length = 0;
      delivering = false;
    }
  }

  function publish(events: readonly ExecutionEvent[], jsons?: readonly string[]): void {
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!;
      published++;
      if (allSubs.length === 0 && !followers.has(event.execution_id)) continue;
      queue.push(event);
      queueOrdinals.push(published);
      queueJsons.push(jsons?.[i]);
    }
    if (!delivering && queue.length > 0) drain();
  }

  /**
   * Delivers history after the sub's cursor for `id`, a page at a time until caught up (a page
   * read later sees what listeners appended meanwhile). False when the store does not hold `id`.
   */
  function replay(sub: Sub, id: string, result: { replayed: number; truncated: boolean }): boolean {
    const cursors = sub.cursors!;
    for (let first = true; ; first = false) {
      const page = history.events(id, cursors.get(id) ?? 0, REPLAY_PAGE);
      if (page === null) return !first;
      if (page.truncated) result.truncated = true;
      if (page.events.length === 0) return true;
      for (const event of page.events) {
        if (!sub.active) return true;
        cursors.set(id, event.sequence);
        result.replayed++;
        send(sub, event, undefined);
      }
    }
  }

  function subscribe(subscribeOptions: SubscribeOptions, listener: EventListener): Subscription {
    const { executions, after, live = false } = subscribeOptions;
    const named = executions === "all" ? null : [...new Set(executions)];
    // A live subscription takes what is handed out after it: the rest of the queue when made from
    // inside a listener. A replaying named one needs no `from` (its replay reached everything stored
    // before it, and its cursors skip that); "all" takes what is published from now.
    const from = live ? (delivering ? handing : published) : named !== null ? 0 : published;
    const sub: Sub = { listener, active: true, from, cursors: named !== null || after !== undefined ? new Map() : null, errored: false };
    const result = { replayed: 0, truncated: false };
    const missing: string[] = [];

    // Subscribe first …
    if (named === null) allSubs = [...allSubs, sub];
    else
      for (const id of named) {
        sub.cursors!.set(id, after ?? 0);
        followers.set(id, [...(followers.get(id) ?? []), sub]);
      }

    // … then replay, holding live delivery until the replay is done. A named execution the store
    // does not hold stays followed: if it appears later (a report from another process), its
    // events arrive live.
    const ids = live ? [] : (named ?? (after === undefined ? [] : [...history.ids()]));
    const wasDelivering = delivering;
    delivering = true;
    try {
      for (const id of ids) {
        if (!sub.active) break;
        if (named === null) sub.cursors!.set(id, after!);
        if (!replay(sub, id, result) && named !== null) missing.push(id);
      }
    } finally {
      delivering = wasDelivering;
    }
    if (!delivering && queue.length > 0) drain();

    return {
      replayed: result.replayed,
      truncated: result.truncated,
      missing,
      unsubscribe: () => unsubscribe(sub, named),
    };
  }

  function unsubscribe(sub: Sub, named: string[] | null): void {
    if (!sub.active) return;
    sub.active = false;
    if (named === null) {
      allSubs = allSubs.filter((s) => s !== sub);
      return;
    }
    for (const id of named) {
      const rest = (followers.get(id) ?? []).filter((s) => s !== sub);
      if (rest.length > 0) followers.set(id, rest);
      else followers.delete(id);
    }
  }

  function close(): void {
    for (const sub of allSubs) sub.active = false;
    for (const subs of followers.values()) for (const sub of subs) sub.active = false;
    allSubs = [];
    followers.clear();
    queue.length = 0;
    queueOrdinals.length = 0;
    queueJsons.length = 0;
  }

  return { publish, subscribe, close };
}

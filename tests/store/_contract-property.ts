import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { ExecutionStore, Subscription } from "../../runtime/store/store.ts";
import { draft, idOf, newExecution, type Fixture } from "./_fixtures.ts";
import { settled } from "./_contract-subscribe.ts";

const EXECS = [idOf(1), idOf(2), idOf(3)];

type Target = { kind: "all" } | { kind: "allAfter"; after: number } | { kind: "named"; execs: number[]; after: number | undefined };
type Action = { kind: "append"; exec: number; count: number } | { kind: "subscribe"; target: Target; onFirst: Append | null } | { kind: "unsubscribe"; pick: number };
type Append = { kind: "append"; exec: number; count: number };
type Command = Action | { kind: "appendNested"; exec: number; count: number; nested: Action } | { kind: "selfUnsubscribe"; pick: number };

const exec = fc.integer({ min: 0, max: EXECS.length - 1 });
const after = fc.integer({ min: 0, max: 6 });
const target: fc.Arbitrary<Target> = fc.oneof(
  fc.constant({ kind: "all" as const }),
  fc.record({ kind: fc.constant("allAfter" as const), after }),
  fc.record({ kind: fc.constant("named" as const), execs: fc.array(exec, { minLength: 1, maxLength: 4 }), after: fc.option(after, { nil: undefined }) }),
);
const append: fc.Arbitrary<Append> = fc.record({ kind: fc.constant("append" as const), exec, count: fc.integer({ min: 1, max: 4 }) });
const action: fc.Arbitrary<Action> = fc.oneof(
  append,
  // onFirst: the new listener appends when it gets its first event, most often during its own replay.
  fc.record({ kind: fc.constant("subscribe" as const), target, onFirst: fc.option(append, { nil: null }) }),
  fc.record({ kind: fc.constant("unsubscribe" as const), pick: fc.nat() }),
);
const command: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: action, weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("appendNested" as const), exec, count: fc.integer({ min: 1, max: 3 }), nested: action }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant("selfUnsubscribe" as const), pick: fc.nat() }), weight: 1 },
);

/** One subscription as the model follows it. */
interface Tracked {
  sub: Subscription | null;
  /** Per followed execution: the last sequence it must not see; it sees every one after it. */
  start: Map<string, number>;
  seen: Map<string, number[]>;
  active: boolean;
  /** Last sequence per execution when it was stopped from the top level (all delivered by then); null when stopped inside a listener. */
  stoppedAt: Map<string, number> | null;
  stopNext: boolean;
  violations: string[];
}

/**
 * Runs the commands against a fresh store and checks every subscription's deliveries. Each
 * top-level command is let settle (its commits delivered) before the next: subscribers hear of
 * what is committed, at once in memory, a tick later in sqlite (docs/durability.md).
 */
async function run(store: ExecutionStore, commands: Command[]): Promise<void> {
  for (const id of EXECS) store.create(newExecution(Number.parseInt(id.slice(-8), 16)));
  const tracked: Tracked[] = [];
  let pending: Action | null = null;
  const last = (id: string) => store.get(id)!.last_sequence;

  const stop = (t: Tracked, inside: boolean) => {
    if (!t.active) return;
    t.active = false;
    t.stoppedAt = inside ? null : new Map(EXECS.map((id) => [id, last(id)]));
    t.sub!.unsubscribe();
  };

  const subscribe = (target: Target, onFirst: Append | null) => {
    const follows = target.kind === "named" ? [...new Set(target.execs.map((i) => EXECS[i]!))] : EXECS;
    const t: Tracked = { sub: null, start: new Map(), seen: new Map(), active: true, stoppedAt: null, stopNext: false, violations: [] };
    for (const id of follows) t.start.set(id, target.kind === "all" ? last(id) : target.after ?? 0);
    let duringSubscribe = 0;
    const onFirstGiven = onFirst;
    const listener = (event: { execution_id: string; sequence: number }) => {
      if (!t.active) t.violations.push(`delivered ${event.execution_id}#${event.sequence} after unsubscribe`);
      if (t.sub === null) duringSubscribe++;
      const list = t.seen.get(event.execution_id) ?? [];
      list.push(event.sequence);
      t.seen.set(event.execution_id, list);
      if (onFirst !== null) {
        const a = onFirst;
        onFirst = null;
        perform(a, true);
      }
      if (t.stopNext) {
        t.stopNext = false;
        stop(t, true);
      }
    };
    const options = target.kind === "all" ? { executions: "all" as const } : target.kind === "allAfter" ? { executions: "all" as const, after: target.after } : { executions: target.execs.map((i) => EXECS[i]!), after: target.after };
    t.sub = store.subscribe(options, listener);
    // Events a listener appended during the replay are delivered live before subscribe returns.
    expect(t.sub.replayed).toBeLessThanOrEqual(duringSubscribe);
    if (onFirstGiven === null) expect(t.sub.replayed).toBe(duringSubscribe);
    tracked.push(t);
  };

  const perform = (a: Action, inside: boolean) => {
    if (a.kind === "append") store.append(EXECS[a.exec]!, Array.from({ length: a.count }, (_, i) => draft.progress(i)));
    else if (a.kind === "subscribe") subscribe(a.target, a.onFirst);
    else if (tracked.length > 0) stop(tracked[a.pick % tracked.length]!, inside);
  };

  // The driver runs a pending action from inside a listener, while other listeners still wait for that event.
  store.subscribe({ executions: "all" }, () => {
    const action = pending;
    pending = null;
    if (action) perform(action, true);
  });

  for (const c of commands) {
    if (c.kind === "appendNested") {
      pending = c.nested;
      perform({ kind: "append", exec: c.exec, count: c.count }, false);
    } else if (c.kind === "selfUnsubscribe") {
      if (tracked.length > 0) tracked[c.pick % tracked.length]!.stopNext = true;
    } else perform(c, false);
    await settled(store);
  }

  for (const t of tracked) {
    expect(t.violations).toEqual([]);
    for (const id of t.seen.keys()) expect(t.start.has(id)).toBe(true);
    for (const [id, start] of t.start) {
      const seen = t.seen.get(id) ?? [];
      // Contiguous from the subscription point: every sequence once, in order.
      expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => start + 1 + i));
      if (t.active || t.stoppedAt !== null) {
        const end = t.active ? last(id) : t.stoppedAt!.get(id)!;
        expect(seen.length).toBe(Math.max(0, end - start));
      }
    }
  }
}

/** The property every store must hold under random interleavings (docs/protocol.md "Order and gaps"). */
export function propertyCases(f: Fixture): void {
  describe("property", () => {
    test("store.subscribe under random interleavings of appends, subscribes and unsubscribes, nested or not, delivers every sequence once, in order, from each subscription point", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(command, { maxLength: 40 }), async (commands) => {
          await run(f.make({ events_retained: 100_000 }), commands);
        }),
        { numRuns: 300 },
      );
    });
  });
}

// One crash schedule: clients act on a served checkout, the server is killed (SIGKILL) at a
// chosen moment, served again, and everything any client was shown must still be there.
import fc from "fast-check";
import { emptyShown, get, noteEvent, openLive, post, type Served, type Shown, type World } from "./_world.ts";

/** What a client does; run ids name one of a few per schedule, so that some are sent twice. */
export type Op =
  | { kind: "start"; run: number | null; events: number }
  | { kind: "cancel"; pick: number }
  | { kind: "read"; pick: number }
  | { kind: "live" }
  | { kind: "pause"; ms: number };

/**
 * When the kill comes: a while after some op was fired, or the moment a client is shown
 * something — the n-th answer (a start's 200, a read, a receipt) or the n-th live frame, the
 * moments a client gets ahead of the disk if anything can. A trigger that never fires kills
 * after the last op.
 */
export type Kill = { on: "time"; afterOp: number; delayMs: number } | { on: "answer"; n: number } | { on: "frame"; n: number };

/** A schedule: its ops, fired one after another without waiting for answers, and when the kill comes. */
export interface Schedule {
  ops: Op[];
  kill: Kill;
}

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("start" as const), run: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }), events: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("read" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.constant({ kind: "live" as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("pause" as const), ms: fc.integer({ min: 0, max: 40 }) }) },
);

/** Short schedules: a few ops, the kill anywhere among them (0: before the first answer). */
export const schedule: fc.Arbitrary<Schedule> = fc.array(op, { minLength: 1, maxLength: 8 }).chain((ops) =>
  fc.record({
    ops: fc.constant(ops),
    kill: fc.oneof(
      fc.record({ on: fc.constant("time" as const), afterOp: fc.integer({ min: 0, max: ops.length }), delayMs: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 5, max: 80 })) }),
      fc.record({ on: fc.constant("answer" as const), n: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ on: fc.constant("frame" as const), n: fc.integer({ min: 1, max: 300 }) }),
    ),
  }),
);

/** The input a run id is always sent with (the same run_id with another input is a conflict). */
function runInput(runId: string, events: number): { events: number; tag: string } {
  return { events, tag: runId };
}

function noteSnapshot(shown: Shown, snapshot: any, where: string): void {
  if (snapshot && typeof snapshot.id === "string" && typeof snapshot.state === "string" && typeof snapshot.last_sequence === "number") {
    shown.snapshots.push({ id: snapshot.id, state: snapshot.state, last_sequence: snapshot.last_sequence, where });
  }
}

/**
 * Drives `schedule` against `served` (named `label`, so run ids never repeat across schedules of a
 * world), kills the server, and answers what clients were shown.
 */
export async function drive(served: Served, plan: Schedule, label: string): Promise<Shown> {
  const shown = emptyShown();
  const ids: string[] = [];
  const inFlight: Promise<unknown>[] = [];
  const lives: Array<{ close(): void }> = [];
  let killed: Promise<void> | null = null;
  const kill = (delayMs = 0) => (killed ??= (delayMs === 0 ? Promise.resolve() : new Promise<void>((resolve) => setTimeout(resolve, delayMs))).then(() => served.kill()));
  const { kill: when } = plan;
  let answers = 0;
  const answered = () => {
    if (when.on === "answer" && ++answers === when.n) void kill();
  };
  let frames = 0;
  const framed = () => {
    if (when.on === "frame" && ++frames === when.n) void kill();
  };
  const runEvents = new Map<string, number>();

  for (let i = 0; i < plan.ops.length; i++) {
    if (when.on === "time" && i === when.afterOp) void kill(when.delayMs);
    const o = plan.ops[i]!;
    if (o.kind === "start") {
      const runId = o.run === null ? null : `${label}-r${o.run}`;
      let input: { events: number; tag: string };
      if (runId !== null) {
        if (!runEvents.has(runId)) runEvents.set(runId, o.events);
        input = runInput(runId, runEvents.get(runId)!);
        shown.sent.set(runId, input);
      } else input = { events: o.events, tag: label };
      inFlight.push(
        post(served.url, "executions.start", { capability: "crash.write", input, ...(runId === null ? {} : { run_id: runId }) }).then((answer) => {
          if (answer === null) return;
          answered();
          noteSnapshot(shown, answer.execution, "start answer");
          ids.push(answer.execution.id);
          if (runId !== null) {
            const earlier = shown.runs.get(runId);
            if (earlier !== undefined && earlier !== answer.execution.id) shown.conflicts.push(`run_id ${runId} answered with ${earlier} and ${answer.execution.id}`);
            shown.runs.set(runId, answer.execution.id);
          }
        }),
      );
    } else if (o.kind === "cancel" && ids.length > 0) {
      const id = ids[o.pick % ids.length]!;
      inFlight.push(
        post(served.url, "executions.cancel", { id }).then((receipt) => {
          if (receipt !== null) answered();
          if (receipt !== null && typeof receipt.state === "string") shown.states.push({ id, state: receipt.state });
        }),
      );
    } else if (o.kind === "read" && ids.length > 0) {
      const id = ids[o.pick % ids.length]!;
      inFlight.push(
        get(served.url, "executions.get", { id }).then((snapshot) => {
          if (snapshot !== null) answered();
          noteSnapshot(shown, snapshot, "read");
        }),
      );
      inFlight.push(
        get(served.url, "executions.events", { id, after: 0 }).then((page) => {
          for (const event of page?.events ?? []) noteEvent(shown, event);
        }),
      );
    } else if (o.kind === "live") lives.push(openLive(served.url, shown, framed));
    else if (o.kind === "pause") await new Promise((resolve) => setTimeout(resolve, o.ms));
    // Let answers arrive between ops now and then, as clients on a network would.
    await new Promise((resolve) => setImmediate(resolve));
  }
  // A trigger that has not fired yet gets the answers still coming a short while, then the kill.
  await Promise.race([Promise.allSettled(inFlight), new Promise((resolve) => setTimeout(resolve, 100))]);
  await kill();
  await Promise.allSettled(inFlight);
  // Frames already received are handled before the sockets go.
  await new Promise((resolve) => setTimeout(resolve, 5));
  for (const live of lives) live.close();
  return shown;
}

/** The state after one more event. */
function next(state: string, event: any): string {
  if (event.type === "execution.started") return "running";
  if (event.type === "execution.cancel_requested") return "cancelling";
  if (event.type === "execution.completed") return event.data.state;
  return state;
}

/** The state an execution is in after `events` (its first ones, in order). */
function stateAfter(events: any[]): string {
  return events.reduce(next, "queued");
}

const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);

/** Everything of one execution the restarted server holds: its snapshot and all its events. */
async function readBack(url: string, id: string): Promise<{ snapshot: any; events: any[] } | null> {
  const snapshot = await get(url, "executions.get", { id });
  if (snapshot === null) return null;
  const events: any[] = [];
  for (let after = 0; ; ) {
    const page = await get(url, "executions.events", { id, after });
    if (page === null) throw new Error(`could not read the events of ${id} after ${after}`);
    if (page.events.length === 0) break;
    events.push(...page.events);
    after = page.events.at(-1).sequence;
  }
  return { snapshot, events };
}

/**
 * Checks what a restarted server holds against what clients were shown before the kill; answers
 * every violation found (none: the promise held). Sends every run_id again: each answered one
 * must come back deduplicated, as the same execution.
 */
export async function check(world: World, served: Served, shown: Shown): Promise<string[]> {
  const problems = [...shown.conflicts];
  const ids = new Set<string>([...[...shown.events.values()].map((e) => e.execution_id), ...shown.snapshots.map((s) => s.id), ...shown.states.map((s) => s.id), ...shown.runs.values()]);
  const held = new Map<string, { snapshot: any; events: any[] }>();
  for (const id of ids) {
    const back = await readBack(served.url, id);
    if (back === null) {
      problems.push(`${id} was shown, and is gone after the restart`);
      continue;
    }
    held.set(id, back);
    const sequences = back.events.map((e) => e.sequence);
    if (sequences.some((s, i) => s !== i + 1) || sequences.length !== back.snapshot.last_sequence) {
      problems.push(`${id}: events are not dense 1..${back.snapshot.last_sequence} (got ${sequences.length}: ${sequences.slice(0, 5).join(",")}…)`);
    }
  }
  for (const [key, event] of shown.events) {
    const back = held.get(event.execution_id);
    if (!back) continue;
    const now = back.events[event.sequence - 1];
    if (now === undefined) problems.push(`${key} was shown, and is gone after the restart`);
    else if (!Bun.deepEquals(now, event, true)) problems.push(`${key} changed: shown ${JSON.stringify(event).slice(0, 200)}, now ${JSON.stringify(now).slice(0, 200)}`);
  }
  for (const s of shown.snapshots) {
    const back = held.get(s.id);
    if (!back) continue;
    if (s.last_sequence > back.events.length) {
      problems.push(`${s.id} was shown at sequence ${s.last_sequence} (${s.where}), and holds only ${back.events.length} events after the restart`);
      continue;
    }
    const state = stateAfter(back.events.slice(0, s.last_sequence));
    if (state !== s.state) problems.push(`${s.id} was shown ${s.state} at sequence ${s.last_sequence} (${s.where}); its events say ${state} there`);
    if (TERMINAL.has(s.state) && (back.snapshot.state !== s.state || back.snapshot.last_sequence !== s.last_sequence)) {
      problems.push(`${s.id} was shown ${s.state} (terminal) at ${s.last_sequence}; after the restart it is ${back.snapshot.state} at ${back.snapshot.last_sequence}`);
    }
  }
  for (const s of shown.states) {
    const back = held.get(s.id);
    if (!back) continue;
    const passed = new Set(["queued"]);
    let state = "queued";
    for (const event of back.events) passed.add((state = next(state, event)));
    if (!passed.has(s.state)) problems.push(`${s.id} was shown ${s.state} in a cancel receipt; its events never pass through it`);
  }
  // Every execution whose handler ran (runs.log) is told as one that ran: never `cancelled` by the
  // restart as if it had not started (docs/durability.md, "A start is noted before the handler begins").
  for (const id of world.runCounts().byExecution.keys()) {
    if (world.settledRuns.has(id)) continue;
    const back = held.get(id) ?? (await readBack(served.url, id));
    if (back === null) continue;
    if (back.snapshot.state === "cancelled" && back.snapshot.failure?.context?.recovered === true) {
      problems.push(`${id} ran (runs.log), and the restart ended it as one that did not start: ${back.snapshot.failure.message}`);
    }
    if (TERMINAL.has(back.snapshot.state)) world.settledRuns.add(id);
  }
  // Every run_id again: an answered one is the same execution, deduplicated; none runs twice.
  for (const [runId, input] of shown.sent) {
    const answer = await post(served.url, "executions.start", { capability: "crash.write", input, run_id: runId });
    if (answer === null) {
      problems.push(`run_id ${runId} sent again was not answered`);
      continue;
    }
    const before = shown.runs.get(runId);
    if (before !== undefined && (answer.deduplicated !== true || answer.execution.id !== before)) {
      problems.push(`run_id ${runId} answered ${before} before the kill, and ${answer.deduplicated ? "" : "a new run "}${answer.execution.id} after it`);
    }
  }
  return problems;
}

/** After the world's last schedule: no run_id's handler ran twice, no execution's either. */
export function ranOnce(world: World): string[] {
  const { byRunId, byExecution } = world.runCounts();
  return [
    ...[...byRunId].filter(([, n]) => n > 1).map(([runId, n]) => `run_id ${runId} ran ${n} times`),
    ...[...byExecution].filter(([, n]) => n > 1).map(([id, n]) => `execution ${id} ran ${n} times`),
  ];
}

import * as v from "valibot";
import { expect } from "bun:test";
import { ExecutionEventSchema, type EventDraft, type ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";
import { defaultLimits, type Limits } from "../../runtime/execution/limits.ts";
import type { ExecutionState } from "../../runtime/execution/state-machine.ts";
import type { ExecutionStore, NewExecution } from "../../runtime/store/store.ts";

/** Builds a store for one test; the contract passes its limits and clock. */
export type MakeStore = (limits: Limits, clock: () => Date) => ExecutionStore;

/** What every contract test starts from. */
export interface Fixture {
  make(overrides?: Partial<Limits>): ExecutionStore;
  clock: TestClock;
  /** What the store last made was told of the unsettled executions it forgot (store.ts, ForgotUnsettled). */
  forgotUnsettled: Array<{ id: string; capability: string }>;
}

/** A wall clock the test moves by hand. */
export class TestClock {
  private t = Date.UTC(2026, 8, 8, 1, 2, 3);
  readonly now = (): Date => new Date(this.t);
  advance(ms: number): void {
    this.t += ms;
  }
  iso(): string {
    return new Date(this.t).toISOString();
  }
}

/** The n-th execution id of a test (a valid id shape). */
export function idOf(n: number): string {
  return `x-20260908T010203Z-${n.toString(16).padStart(8, "0")}`;
}

/** A NewExecution with test defaults. */
export function newExecution(n: number, overrides: Partial<NewExecution> = {}): NewExecution {
  return {
    id: idOf(n),
    capability: "demo.read",
    input: { n },
    actor: { kind: "http" },
    repository: "/repo",
    run_id: null,
    session_key: null,
    request_id: `req-${n}`,
    trace_id: "0af7651916cd43dd8448eb211c80319c",
    cancellable: true,
    effect: "read",
    ...overrides,
  };
}

/** Limits for a contract test: the defaults, with some bounds made small. */
export function limitsWith(overrides: Partial<Limits> = {}): Limits {
  return { ...defaultLimits(), ...overrides };
}

const failure = (code: string) => buildFailure({ error_code: code, stage: "run", message: `it ${code}`, request_id: "req", trace_id: "trace", correlation_id: "c-0123456789abcdef" });

/** Draft builders, one per event type. */
export const draft = {
  started: (): EventDraft => ({ type: "execution.started", data: {} }),
  progress: (current: number, total?: number): EventDraft => ({ type: "execution.progress", data: total === undefined ? { current } : { current, total } }),
  log: (message: string, level: "debug" | "info" | "warn" | "error" = "info"): EventDraft => ({ type: "execution.log", data: { level, message } }),
  step: (id: string, title = id): EventDraft => ({ type: "execution.step", data: { id, title } }),
  stepDone: (id: string, ok = true, message?: string): EventDraft => ({ type: "execution.step_done", data: message === undefined ? { id, ok } : { id, ok, message } }),
  stream: (chunk: string): EventDraft => ({ type: "execution.stream", data: { name: "stdout", chunk } }),
  diagnostic: (message: string): EventDraft => ({ type: "execution.diagnostic", data: { severity: "warning", message, file: "a.ts", line: 1, column: 2 } }),
  cancelRequested: (): EventDraft => ({ type: "execution.cancel_requested", data: { actor: { kind: "cli", pid: 42 } } }),
  created: (): EventDraft => ({ type: "execution.created", data: { capability: "demo.read", input: {}, actor: { kind: "http" }, run_id: null, session_key: null } }),
  completed: (state: "succeeded" | "failed" | "cancelled", output: unknown = { ok: true }): EventDraft =>
    state === "succeeded"
      ? { type: "execution.completed", data: { state, output, duration_ms: 12.5 } }
      : { type: "execution.completed", data: { state, failure: failure(state === "failed" ? "internal" : "cancelled"), duration_ms: 3 } },
};

/** The draft that asks for a move to `to` (queued can only be reached by a second execution.created). */
export function moveTo(to: ExecutionState): EventDraft {
  switch (to) {
    case "queued":
      return draft.created();
    case "running":
      return draft.started();
    case "cancelling":
      return draft.cancelRequested();
    default:
      return draft.completed(to);
  }
}

/** Drafts that bring a fresh (queued) execution to `state` along legal moves. */
export function pathTo(state: ExecutionState): EventDraft[] {
  switch (state) {
    case "queued":
      return [];
    case "running":
      return [draft.started()];
    case "cancelling":
      return [draft.started(), draft.cancelRequested()];
    case "cancelled":
      return [draft.completed("cancelled")];
    default:
      return [draft.started(), draft.completed(state)];
  }
}

/** Every event of an execution the store still holds, read page by page. */
export function allEvents(store: ExecutionStore, id: string): ExecutionEvent[] {
  const out: ExecutionEvent[] = [];
  for (let after = 0; ; ) {
    const page = store.events(id, after, 1000)!;
    if (page.events.length === 0) return out;
    out.push(...page.events);
    after = page.events.at(-1)!.sequence;
  }
}

/** Asserts the event validates against the protocol's one event schema. */
export function expectValidEvent(event: unknown): void {
  const result = v.safeParse(ExecutionEventSchema, event);
  if (!result.success) throw new Error(`event does not validate: ${JSON.stringify(event)}: ${result.issues.map((i) => i.message).join("; ")}`);
  expect(result.success).toBe(true);
}

/** UTF-8 byte length. */
export function bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

import type { ArtifactInfo } from "../../../runtime/execution/plane.ts";
import type { LogFilter } from "../../../cockpit/log-filter.ts";
import type { Bucket } from "../../../cockpit/chart-data.ts";
import type { RegisteredCapability } from "../../../runtime/capability/registered.ts";
import { executionLinks, type ExecutionSnapshot } from "../../../runtime/execution/snapshot.ts";
import { ExecutionPage } from "../../../cockpit/pages/execution.tsx";
import type { HistoryExtras } from "../../../cockpit/history-extras.ts";
import { OverviewPage } from "../../../cockpit/pages/overview.tsx";
import { ExecutionsPage } from "../../../cockpit/pages/executions.tsx";
import { isTerminal, type ExecutionState } from "../../../runtime/execution/state-machine.ts";
import { CapabilityPage } from "../../../cockpit/pages/capability.tsx";
import { loadPage, type FakeFetch, type LoadedPage } from "./dom.ts";

/** The execution the DOM tests follow. */
export const ID = "x-20260908T010203Z-0a1b2c3d";

const T0 = Date.UTC(2026, 8, 8, 1, 2, 3);

/** The timestamp of sequence `n` in these fixtures: one millisecond apart. */
export const stamp = (n: number) => new Date(T0 + n).toISOString();

/** One numbered event of {@link ID} (or another execution), as the live channel sends it. */
export function event(sequence: number, type: string, data: Record<string, unknown> = {}, execution = ID) {
  return { schema_version: "1", event_id: `${execution}#${sequence}`, execution_id: execution, sequence, timestamp: stamp(sequence), type, data };
}

/** A running execution at sequence 2 (created, started), cancellable, with nothing reported yet. */
export function runningSnapshot(overrides: Partial<ExecutionSnapshot> = {}): ExecutionSnapshot {
  return {
    id: ID,
    capability: "executions.demonstrate",
    state: "running",
    actor: { kind: "cockpit" },
    repository: "/work/checkout",
    run_id: null,
    session_key: null,
    request_id: "r-1",
    trace_id: "0".repeat(32),
    created_at: stamp(1),
    started_at: stamp(2),
    finished_at: null,
    duration_ms: null,
    cancellable: true,
    effect: "read",
    input: { steps: 3 },
    capability_version: "docket@test",
    failure: null,
    steps: [],
    progress: null,
    diagnostics: [],
    diagnostics_dropped: 0,
    steps_dropped: 0,
    log: [],
    log_dropped: 0,
    last_sequence: 2,
    retained_from: 1,
    truncated: false,
    links: executionLinks(ID),
    ...overrides,
  };
}

/** The execution page as the server renders it for `snapshot`. */
export function executionHtml(snapshot: ExecutionSnapshot, options: { logLimit?: number; stepLimit?: number; diagnosticLimit?: number; artifacts?: ArtifactInfo[]; logFilter?: LogFilter; now?: number; extras?: HistoryExtras } = {}): string {
  const page = ExecutionPage({
    root: "/work/checkout",
    execution: snapshot,
    capability: null,
    extras: options.extras ?? { streams: new Map(), streamsWritten: new Map(), streamsDropped: 0, other: [] },
    heartbeatMs: 20_000,
    logLimit: options.logLimit ?? 1000,
    stepLimit: options.stepLimit ?? 1000,
    diagnosticLimit: options.diagnosticLimit ?? 500,
    streamLimit: 65_536,
    notice: null,
    artifacts: options.artifacts ?? [],
    logFilter: options.logFilter ?? { level: "debug", query: "" },
    now: options.now ?? Date.parse("2026-09-08T01:10:00.000Z"),
  });
  return `<!doctype html>\n${String(page)}`;
}

/** Counts per state, zero but for those given. */
export function countsOf(given: Partial<Record<ExecutionState, number>> = {}): Record<ExecutionState, number> {
  return { queued: 0, running: 0, cancelling: 0, succeeded: 0, failed: 0, cancelled: 0, ...given };
}

/** The overview as the server renders it, with `active` running now (those not ended) and in recent. */
export function overviewHtml(active: ExecutionSnapshot[], counts = countsOf({ running: active.length, succeeded: 4 }), buckets: Bucket[] = []): string {
  const running = active.filter((x) => !isTerminal(x.state));
  const page = OverviewPage({ root: "/work/checkout", counts, active: running, recent: active, loadErrors: [], capabilityCount: 3, heartbeatMs: 20_000, activity: { buckets, spanHours: 6, more: false } });
  return `<!doctype html>\n${String(page)}`;
}

/** The executions list as the server renders it for this filter. */
export function executionsHtml(items: ExecutionSnapshot[], counts: Record<ExecutionState, number>, filter: { state?: ExecutionState; capability?: string; cursor?: string } = {}, pageSize = 50): string {
  const page = ExecutionsPage({ root: "/work/checkout", items, counts, nextCursor: null, pageSize, filter: { state: filter.state ?? null, capability: filter.capability ?? null, cursor: filter.cursor ?? null }, capabilityIds: ["team.echo"], heartbeatMs: 20_000 });
  return `<!doctype html>\n${String(page)}`;
}

/** A registered capability with this effect and a one-field input, for the form's script. */
export function capabilityOf(effect: "read" | "write"): RegisteredCapability {
  return {
    id: effect === "write" ? "team.deploy" : "team.look",
    title: "Fixture",
    description: "A fixture.",
    effect,
    cancellable: false,
    timeout_ms: null,
    cache: null,
    execution: "allowed",
    examples: [],
    errors: [],
    input_schema: { type: "object", properties: { name: { type: "string" } }, required: [] },
    output_schema: { type: "object", properties: {} },
    source: { kind: "builtin", file: "fixture.ts" },
    version: "docket@test",
    plane: false,
    def: {} as RegisteredCapability["def"],
  };
}

/** The capability page as the server renders it. */
export function capabilityHtml(capability: RegisteredCapability): string {
  return `<!doctype html>\n${String(CapabilityPage({ root: "/work/checkout", capability, values: null, errors: {}, problem: null, result: null, history: [] }))}`;
}

/**
 * The page of a running execution (runningSnapshot) with the execution page's scripts, its socket
 * open and ready: `send(type, data)` gives it the next event in sequence; `ageMs`, made that long
 * ago (a page behind a flood receives old events).
 */
export function liveExecutionPage(options: { fetch?: FakeFetch } = {}): { page: LoadedPage; send(type: string, data: Record<string, unknown>, ageMs?: number): void } {
  const snapshot = runningSnapshot();
  const page = loadPage(executionHtml(snapshot), { path: `/cockpit/executions/${ID}`, scripts: ["socket.js", "format.js", "log-filter.js", "refresh.js", "execution.js"], ...options });
  const socket = page.sockets[0]!;
  socket.open();
  socket.receive({ type: "stream.ready", schema_version: "1", subscribed: [ID], replayed: 0, truncated: false, heartbeat_ms: 20_000 });
  let next = snapshot.last_sequence + 1;
  return {
    page,
    send: (type, data, ageMs) => socket.receive({ ...event(next++, type, data), ...(ageMs === undefined ? {} : { timestamp: new Date(Date.now() - ageMs).toISOString() }) }),
  };
}

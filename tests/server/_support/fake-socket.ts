import { estimatedFrameBytes } from "../../../runtime/server/live-frame.ts";
import type { LiveClock, LiveSocket, LiveTopics, SendResult } from "../../../runtime/server/live-socket.ts";
import { createMemoryStore } from "../../../runtime/store/memory-store.ts";
import { createSqliteStore } from "../../../runtime/store/sqlite-store.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultLimits, type Limits } from "../../../runtime/execution/limits.ts";
import type { ExecutionStore, NewExecution } from "../../../runtime/store/store.ts";

/** A LiveSocket that records what it was sent; `mode` decides what the next send answers. */
export class FakeSocket implements LiveSocket {
  readonly frames: any[] = [];
  /** The frames as written, for their sizes. */
  readonly texts: string[] = [];
  mode: SendResult = "ok";
  pings = 0;
  corks = 0;
  buffered = 0;
  closed: { code: number; reason: string } | null = null;
  readonly topics = new Set<string>();

  constructor(private readonly hub: FakeTopics | null = null) {
    hub?.sockets.add(this);
  }

  subscribe(topic: string): void {
    if (!this.hub) throw new Error("no topics here");
    this.topics.add(topic);
  }
  unsubscribe(topic: string): void {
    this.topics.delete(topic);
  }
  /** What a publish delivers: buffered like any write, never refused. */
  receive(text: string): void {
    if (this.closed) return;
    this.texts.push(text);
    this.frames.push(JSON.parse(text));
  }

  /** Frames written by the socket's own sends (not by a publish). */
  sent = 0;

  /** Called on each send: a test's clock can take the time a send costs. */
  onSend: (() => void) | null = null;

  send(text: string): SendResult {
    if (this.closed || this.mode === "dropped") return "dropped";
    this.sent++;
    this.onSend?.();
    this.texts.push(text);
    this.frames.push(JSON.parse(text));
    return this.mode;
  }
  bufferedAmount(): number {
    return this.buffered;
  }
  ping(): void {
    this.pings++;
  }
  cork(fn: () => void): void {
    this.corks++;
    fn();
  }
  close(code: number, reason: string): void {
    this.closed = { code, reason };
  }
  /** Event frames only (no stream.* control frames). */
  events(): any[] {
    return this.frames.filter((f) => typeof f.sequence === "number");
  }
  types(): string[] {
    return this.frames.map((f) => f.type);
  }
}

/** A fake of Bun's topics: a publish reaches every FakeSocket subscribed to the topic. */
export class FakeTopics implements LiveTopics {
  readonly sockets = new Set<FakeSocket>();
  published = 0;
  publish(topic: string, text: string): void {
    this.published++;
    for (const socket of this.sockets) if (socket.topics.has(topic)) socket.receive(text);
  }
}

/** A LiveClock moved by hand. */
export class FakeLiveClock implements LiveClock {
  private time = Date.UTC(2026, 8, 8, 1, 2, 3);
  private timers = new Map<number, { at: number; fn: () => void }>();
  private next = 1;
  now(): number {
    return this.time;
  }
  monotonic(): number {
    return this.time;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const handle = this.next++;
    this.timers.set(handle, { at: this.time + ms, fn });
    return handle;
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  /** Moves time forward, firing timers that fall due, in order. */
  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      const due = [...this.timers].filter(([, t]) => t.at <= target).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.time = due[1].at;
      due[1].fn();
    }
    this.time = target;
  }
  get pending(): number {
    return this.timers.size;
  }
}

/** The n-th execution id of a test. */
export const idOf = (n: number) => `x-20260908T010203Z-${n.toString(16).padStart(8, "0")}`;

// The sqlite stores' folders: a randomized test makes hundreds, and left behind they filled the
// temporary folder of every machine that ran the suite (bun test emits no process "exit").
const sqliteDirs: string[] = [];

/** Removes the folders of the sqlite stores made so far: a test file's afterAll. */
export function removeSqliteStores(): void {
  for (const dir of sqliteDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A sqlite store's path in a folder of its own (see removeSqliteStores). */
function sqlitePath(): string {
  const dir = mkdtempSync(join(tmpdir(), "docket-live-sqlite-"));
  sqliteDirs.push(dir);
  return join(dir, "state.db");
}

/** A memory store with test limits, and a helper that creates an execution with `events` progress events. */
export function storeWith(overrides: Partial<Limits> = {}, kind: "memory" | "sqlite" = "memory") {
  const limits = { ...defaultLimits(), ...overrides };
  // The sqlite store commits on a turn of its own and hands subscribers each batch once written:
  // what a live connection's moves between topic and own subscription must not lose events to.
  const store: ExecutionStore =
    kind === "memory" ? createMemoryStore({ limits }) : createSqliteStore({ path: sqlitePath(), limits });
  const create = (n: number): string => {
    const execution: NewExecution = {
      id: idOf(n),
      capability: "demo.read",
      input: { n },
      actor: { kind: "http" },
      repository: "/checkout",
      run_id: null,
      session_key: null,
      request_id: "r-1",
      trace_id: "0af7651916cd43dd8448eb211c80319c",
      cancellable: false,
      effect: "read",
    };
    store.create(execution);
    store.append(execution.id, [{ type: "execution.started", data: {} }]);
    return execution.id;
  };
  const progress = (id: string, count: number) =>
    store.append(
      id,
      Array.from({ length: count }, (_, i) => ({ type: "execution.progress" as const, data: { current: i + 1 } })),
    );
  return { store, limits, create, progress };
}

/** Lets the channel's writer run: it writes on its own turns of the event loop (setImmediate), in slices. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 8; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * The subscriber_queue_bytes that holds exactly `frames` live progress frames of storeWith's
 * executions: `frames` times what such a frame counts for (its estimated length, the same for
 * every progress event without a message), so one more never fits.
 */
export function queueBytesFor(frames: number): number {
  const { store, create, progress } = storeWith();
  const id = create(1);
  progress(id, 8);
  let counted = 0;
  const subscription = store.subscribe({ executions: [id], after: 0 }, (event) => {
    if (event.type === "execution.progress") counted = Math.max(counted, estimatedFrameBytes(event));
  });
  subscription.unsubscribe();
  store.close();
  return frames * counted + 1;
}

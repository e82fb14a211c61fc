import type { ExecutionEvent } from "../execution/protocol.ts";
import { SCHEMA_VERSION } from "../execution/protocol.ts";
import type { NotHeld } from "../execution/marked-run-answer.ts";
import type { Limits } from "../execution/limits.ts";
import { StoreDamagedError, type ExecutionStore } from "../store/store.ts";
import { AWAITING_TURN, LiveClient, type LiveGroup } from "./_live-client.ts";
import { LiveGroups } from "./_live-groups.ts";
import { signedSequence } from "./_live-log.ts";
import { manyHeld, openedAt, ReplayPlanner, type OpenedAt } from "./_live-replay.ts";
import { boundFrame } from "./live-frame.ts";
import { systemLiveClock, type LiveClock, type LiveSocket, type LiveTopics, type SendResult } from "./live-socket.ts";
import type { LiveTarget } from "./live-target.ts";
import { checkLiveRequest, type LiveCheck } from "./live-check.ts";

export type { LiveCheck };

/** What the live channel is built from; the clock is injected so heartbeat tests run in milliseconds. */
export interface LiveChannelOptions {
  store: ExecutionStore;
  limits: Limits;
  clock?: LiveClock;
  /** Why an execution the store does not hold is not here, when it ran in a `docket run` without a server (the plane's whyNotHeld). */
  whyNotHeld?: (id: string, cannot: string) => NotHeld | null;
}

// Frames one client gets in one corked write; the writer then moves on to the next client, so
// one busy connection cannot hold the others back.
const WRITE_BATCH = 256;
// The writer's slice: it writes for at most this long, then yields to the event loop (worker
// messages, HTTP), so that however many watchers there are, the work they watch is never kept
// waiting behind their sends (docs/protocol.md, "Backpressure").
const SLICE_MS = 1;
// The writer's share while a flood keeps the loop from turning (a worker's batches arrive one after
// another, docs/containment.md): once frames have waited this long, the append path writes one
// slice itself, so that a healthy client keeps up rather than loses events.
const WRITER_GAP_MS = 6;
// Under a flood the writer earns this share of the time it does not write, and spends it (see
// slice): its work — serializing, sends, publishes, and the drains of sockets that were full —
// stays a bounded part of the main thread however many watchers there are (the work they watch
// slowed by about an eighth of the main thread at most; they lag instead).
const SHARE = 0.15;
// Appends between two looks at the clock on the append path.
const LOOK_EVERY = 64;
// At most this many frames queued since the writer last ran, and it runs as a microtask (right
// after the append that queued them) instead of on a turn of its own.
const TRICKLE = 16;
// ...unless the writer ran less than this long ago: then frames are arriving steadily (many
// executions at once, each a trickle), and one turn of the event loop gathers them into one
// corked write per client instead of a send (a system call) per frame. A quiet watcher still
// gets each event at once.
const STEADY_MS = 0.5;
// On shutdown, a socket still holding frames it has not sent is given this long to send them and
// the `stream.closing` notice queued behind them before it is closed (closing at once would
// discard both, and a client that fell behind would see the connection just end).
const CLOSE_DRAIN_MS = 1000;
// How often the sockets still draining on shutdown are looked at.
const CLOSE_POLL_MS = 10;
// History is read for a connection a page at a time, as its socket takes it: at most this many
// events, and a page stops once it holds this many bytes of frames.
const REPLAY_PAGE = 256;
const REPLAY_BYTES = 1024 * 1024;
// Connections to every execution from a cursor whose history is planned and sent at once, while
// more than a page of heads is held (manyHeld); the others wait their turn, unplanned and out of
// the log. Each such connection holds a plan entry per execution held and makes garbage as fast
// as it reads: thirty at once took the server to 1.7 GB, 470 MB taking turns, in about the same
// total time (the main thread is the limit).
const REPLAYS_AT_ONCE = 2;
// A connection holding a turn gives it up once its socket stayed full this long without draining:
// a client that stopped reading holds the others' history back for a quarter of a second, not
// more. Giving it up costs a slow client nothing: it goes on, only no longer counted as a turn.
const TURN_STALL_MS = 250;
// The heartbeat tick is a quarter of heartbeat_ms: a connection quiet for 5 ticks (more than
// heartbeat_ms, at most 1.25 × it) gets a heartbeat. One timer serves every connection.
const TICKS_PER_HEARTBEAT = 4;
// A connection whose ping stays unanswered this many ticks (a heartbeat and a tick) is closed: its
// peer is gone without a word (a half-open TCP connection) or does not speak WebSocket, and it
// held a connection slot for nothing (the runtime's own idle timeout comes minutes later). A
// WebSocket client answers at once, and a ping waits behind at most the frames its socket holds.
const UNANSWERED_TICKS = TICKS_PER_HEARTBEAT + 1;
// A client may ping this many times a heartbeat (a library's keep-alive pings every few
// seconds); past it the connection is closed (1008, "too many pings"). Each ping is answered by a
// pong the runtime queues whether or not the client reads: a client flooding pings and reading
// nothing grew the server by about 16 MB a connection for as long as it stayed open.
const CLIENT_PINGS_PER_HEARTBEAT = 8;

/**
 * The live channel (docs/protocol.md), runtime-agnostic. Every connection reads one log of frames
 * fed by one store subscription (_live-groups.ts), each a place in it taking what it follows;
 * connections that follow the same thing form a group, which may share a topic. A connection gets
 * `stream.ready`, then its history a page at a time (_live-replay.ts), then the log from its place;
 * one more than subscriber_queue_bytes behind loses events alone and is told `stream.lagged`. The
 * store's listener does O(1) work per event; the writer sends on turns of its own, and takes a
 * bounded share of a main thread a flood holds.
 */
export class LiveChannel {
  private readonly clients = new Map<LiveSocket, LiveClient>();
  private readonly store: ExecutionStore;
  private readonly limits: Limits;
  private readonly clock: LiveClock;
  private epoch = 0;
  private timer: unknown = null;
  private stopped = false;
  // The last frame made: groups that get the same event share the same string.
  private memoEvent: ExecutionEvent | null = null;
  private memoFrame = "";
  // Clients and topic groups with frames to write. The store's listener only queues; the writer
  // sends in slices of SLICE_MS on their own turn of the event loop (setImmediate), never on the
  // append path: fan-out to many clients costs the producer one scheduled task, not the sends.
  private dirty: LiveClient[] = [];
  private outboxes: LiveGroup[] = [];
  // The log grew since the writer last looked: it looks at every group once (O(groups) per slice,
  // never per event) for topics to publish and members to write.
  private grown = false;
  /** Per execution not ended, the last sequence the store handed out: where a gap in them begins. */
  private readonly lastDelivered = new Map<string, number>();
  // Connections whose history is still being looked for (see plan()).
  private planning: LiveClient[] = [];
  // Connections to every execution from a cursor waiting for their turn (REPLAYS_AT_ONCE), oldest first.
  private waitingForTurn: Array<{ client: LiveClient; target: LiveTarget; opened: OpenedAt }> = [];
  // Turns held: such connections planning or sending history.
  private readonly turnHolders = new Set<LiveClient>();
  // The timer that takes a turn from a holder whose socket stays full while others wait.
  private turnTimer: unknown = null;
  private writeScheduled = false;
  private queuedSinceWrite = 0;
  private lastWrite = Number.NEGATIVE_INFINITY;
  // When the writer last ran or, if later, when frames began to wait for it (see share()).
  private waitingSince = 0;
  // True while a slice runs: a slice written from the append path must not start another.
  private inSlice = false;
  // The milliseconds of writing the writer has earned and not spent (see slice): negative after a
  // slice that ran over, which the next ones pay back by waiting while events keep coming.
  private credit = SLICE_MS;
  // When credit was last earned (monotonic).
  private earned = 0;
  // True while a client is written (see flush).
  private flushing = false;
  /** The trickle path: a microtask that writes only if what came since is still a trickle. */
  private readonly writeTrickle = () => {
    if (this.queuedSinceWrite <= TRICKLE) return this.writeSlice();
    // A flood arrived in the same tick (a worker's batch): it gets a turn of its own instead.
    setImmediate(this.writeSlice);
  };
  private readonly writeSlice = () => {
    // Held while the slice runs: a client put back in line below must not schedule a write of its own.
    this.writeScheduled = true;
    this.slice();
    // What is left waits for a turn of its own, never another microtask: a flood must not be
    // written in one go on the producer's path.
    if (this.writing && !this.stopped) setImmediate(this.writeSlice);
    else this.writeScheduled = false;
  };

  /**
   * Writes for at most SLICE_MS: topics first, then round after round over the waiting clients.
   * Under a flood (frames arriving faster than a trickle: the producer is busy), only for what it
   * has earned: SHARE of the time since it last wrote, up to SLICE_MS. A slice runs over by up to
   * one client's batch; every slice's time is charged in full, and the writer skips its turns
   * until it has earned it back, so that its share holds however small the slices are.
   */
  private slice(): void {
    const started = this.monotonic();
    const queued = this.queuedSinceWrite;
    this.queuedSinceWrite = 0;
    this.credit = Math.min(SLICE_MS, this.credit + (started - this.earned) * SHARE);
    this.earned = started;
    // Held to its credit under a flood, and while events still come and it pays back a slice
    // that ran over (a flood's batches do not all arrive in one turn: some turns see a trickle in
    // the middle of one). Once nothing comes, it writes at once whatever it owes.
    const held = queued > TRICKLE || (queued > 0 && this.credit < 0);
    if (held && this.credit <= 0) return;
    this.inSlice = true;
    const until = started + (held ? this.credit : SLICE_MS);
    this.lastWrite = this.waitingSince = this.monotonic();
    this.giveTurns();
    // Connections looking for their history: a step each, at least one per slice, while it lasts.
    for (let i = 0; i < this.planning.length && (i === 0 || this.monotonic() <= until); i++) {
      const client = this.planning.shift()!;
      if (client.closed) continue;
      this.plan(client);
      if (client.planning !== null && !client.closed) this.planning.push(client);
    }
    // The log grew: topics with frames to publish, and members behind, in line for their sends
    // (O(groups + members) per turn, not per event).
    let touched = this.grown;
    if (this.grown) {
      this.grown = false;
      for (const group of this.groups.all()) {
        if (group.pending > 0 && !group.scheduled) {
          group.scheduled = true;
          this.outboxes.push(group);
        }
        for (const client of group.behind) if (!client.blocked && client.hasFrames) this.markDirty(client);
        for (const client of group.lagging) if (!client.blocked) this.markDirty(client);
      }
    }
    // Topics first: one publish serves every caught-up member of a group.
    while (this.outboxes.length > 0) {
      const group = this.outboxes[0]!;
      if (!this.groups.publishPending(group, until, this.monotonic, this.leftTopic, this.epoch)) break;
      group.scheduled = false;
      this.outboxes.shift();
    }
    // Round after round over the waiting clients, WRITE_BATCH frames each, until the slice is used.
    while (this.dirty.length > 0 && this.monotonic() <= until) {
      const clients = this.dirty;
      this.dirty = [];
      let i = 0;
      for (; i < clients.length && this.monotonic() <= until; i++) {
        const client = clients[i]!;
        client.scheduled = false;
        this.flush(client, WRITE_BATCH);
        touched = true;
        // Still frames to write and nothing in the way: back in line behind the others.
        if (!client.closed && !client.blocked && client.hasFrames) this.markDirty(client);
      }
      // Those the slice did not reach keep their place at the front (still marked scheduled).
      if (i < clients.length) {
        this.dirty = [...clients.slice(i), ...this.dirty];
        break;
      }
    }
    // Frames every member of a group has written need not be held any longer.
    if (touched) this.groups.trim();
    this.inSlice = false;
    // Every slice is charged, held or not; time spent writing earns nothing.
    const ended = this.monotonic();
    this.credit -= ended - started;
    this.earned = ended;
  }

  /**
   * The append path's look at the writer, every LOOK_EVERY frames: when frames have waited more
   * than WRITER_GAP_MS (the loop has not turned: a flood), one slice is written here and now.
   */
  private share(): void {
    if ((++this.queuedSinceWrite & (LOOK_EVERY - 1)) !== 0 || this.inSlice || this.flushing || this.stopped) return;
    if (this.monotonic() - this.waitingSince > WRITER_GAP_MS) this.slice();
  }
  private readonly groups: LiveGroups;
  private readonly monotonic: () => number;
  private readonly whyNotHeld: LiveChannelOptions["whyNotHeld"];

  constructor(options: LiveChannelOptions) {
    this.store = options.store;
    this.limits = options.limits;
    this.whyNotHeld = options.whyNotHeld;
    this.clock = options.clock ?? systemLiveClock;
    this.monotonic = this.clock.monotonic?.bind(this.clock) ?? (() => performance.now());
    // The channel's subscription is live: it takes what is handed out from now on, and each
    // connection is sent its own history before it reads from the log (see open and flush).
    this.groups = new LiveGroups(
      () => this.store.subscribe({ executions: "all", live: true }, (event, json) => this.deliver(event, json)),
      this.limits.subscriber_queue_bytes,
      this.limits.lagging_kept_bytes,
      this.makeFrame,
    );
  }

  /** True while the writer has work left: frames to send or publish, connections still planning (tests wait on it too). */
  get writing(): boolean {
    return this.dirty.length > 0 || this.outboxes.length > 0 || this.grown || this.planning.length > 0 || (this.waitingForTurn.length > 0 && this.turnHolders.size < REPLAYS_AT_ONCE);
  }

  /** Frames the channel still keeps for a connection (sent ones it has not let go of yet too): what it costs the server's memory. */
  framesKept(socket: LiveSocket): number {
    return this.clients.get(socket)?.queue.length ?? 0;
  }

  /** Open connections. */
  get connections(): number {
    return this.clients.size;
  }

  /**
   * Lets caught-up connections that follow the same thing share one topic of the runtime's
   * native fan-out (Bun). Without it (Node) every connection gets its own sends.
   */
  useTopics(topics: LiveTopics): void {
    this.groups.useTopics(topics);
  }

  /** Checks a `/events` request before any upgrade: 400 by shape, 426 without an upgrade, 404 unknown execution, 503 full. */
  check(params: URLSearchParams, upgrade: boolean): LiveCheck {
    return checkLiveRequest(params, upgrade, { store: this.store, limits: this.limits, connections: this.clients.size, stopping: this.stopped, whyNotHeld: this.whyNotHeld });
  }

  /**
   * Starts delivery on an upgraded socket: `stream.ready`, the history it asked for, then live
   * events. It takes its place in the channel's log at once; its history (everything stored up to
   * that place, see _live-replay.ts) is read a page at a time as its socket takes it, so a
   * connection asking for a lot of history costs neither a long stall nor its whole history in memory.
   */
  open(socket: LiveSocket, target: LiveTarget): void {
    if (this.stopped || this.clients.size >= this.limits.live_connections) {
      // Connections that raced past check() are still held to the limit.
      socket.close(1013, this.stopped ? "server stopping" : "too many live connections");
      return;
    }
    const client = new LiveClient(socket, this.groups.groupFor(target));
    this.clients.set(socket, client);
    client.seen = this.epoch;
    this.armHeartbeat();
    if (target.executions === "all" && target.after !== undefined && manyHeld(this.store)) {
      // History of every one of many executions: one of a few at once (REPLAYS_AT_ONCE); the rest
      // wait, unplanned. With fewer held, the plan is one page, made at once (watchers of a flood
      // from a cursor share the live log from the start, rather than each read it from the store later).
      client.turn = "waiting";
      client.planning = AWAITING_TURN;
      // What it opened after: executions created later are new to it whenever its turn comes.
      this.waitingForTurn.push({ client, target, opened: openedAt(this.store) });
      this.giveTurns();
      return;
    }
    this.begin(client, target, null);
  }

  /**
   * Takes the turn of each holder whose socket stayed full TURN_STALL_MS without draining, then
   * gives the turns free to waiting connections, oldest first; while some wait behind a full
   * socket, looks again when its time is up.
   */
  private giveTurns(): void {
    const now = this.monotonic();
    for (const holder of this.turnHolders) if (holder.blockedSince !== null && now - holder.blockedSince >= TURN_STALL_MS) this.endTurn(holder);
    while (this.turnHolders.size < REPLAYS_AT_ONCE && this.waitingForTurn.length > 0 && !this.stopped) {
      const { client, target, opened } = this.waitingForTurn.shift()!;
      if (client.closed) continue;
      client.turn = "held";
      this.turnHolders.add(client);
      this.begin(client, target, opened);
    }
    this.checkTurnsLater();
  }

  /** While connections wait and a holder's socket is full, looks at the turns again once its TURN_STALL_MS are up. */
  private checkTurnsLater(): void {
    if (this.turnTimer !== null) this.clock.clearTimeout(this.turnTimer);
    this.turnTimer = null;
    if (this.waitingForTurn.length === 0 || this.stopped) return;
    let next = Number.POSITIVE_INFINITY;
    for (const holder of this.turnHolders) if (holder.blockedSince !== null) next = Math.min(next, holder.blockedSince + TURN_STALL_MS);
    if (next === Number.POSITIVE_INFINITY) return;
    this.turnTimer = this.clock.setTimeout(() => {
      this.turnTimer = null;
      this.giveTurns();
    }, Math.max(1, next - this.monotonic()));
  }

  /** Gives up a connection's turn (its history is sent, it closed, or it stopped reading); the next waiting one takes it. */
  private endTurn(client: LiveClient): void {
    if (client.turn !== "held") return;
    client.turn = null;
    this.turnHolders.delete(client);
    if (this.waitingForTurn.length > 0) this.scheduleWrite();
  }

  /**
   * A connection takes its place in the log and its history is looked for: planned at once when
   * it is short, else on the writer's turns (see plan()).
   */
  private begin(client: LiveClient, target: LiveTarget, opened: OpenedAt | null): void {
    // In the log before its history is looked for (the log keeps what it needs from here), but
    // written nothing until its history is planned.
    const start = client.group.log.end;
    this.groups.enter(client, start);
    try {
      client.planning = { planner: new ReplayPlanner(this.store, target, opened ?? openedAt(this.store)), start };
    } catch (error) {
      return this.unreadable(client, error);
    }
    this.plan(client);
    // Many executions to look at (all of them, from a cursor): the rest on the writer's turns.
    if (client.planning !== null && !client.closed) {
      this.planning.push(client);
      this.scheduleWrite();
    }
  }

  /** One step of a connection's planning (see ReplayPlanner); once it is done, `stream.ready` and its history go out. */
  private plan(client: LiveClient): void {
    const { planner, start } = client.planning!;
    if (planner === null) return;
    try {
      if (!planner.step()) return;
    } catch (error) {
      return this.unreadable(client, error);
    }
    client.planning = null;
    const { plan } = planner;
    const target = client.group.target;
    client.replay = plan.ranges;
    client.skip = plan.skip;
    // What it says it has: a loss before it got anything more is announced from its cursor of
    // that execution (named executions may each have their own).
    for (const range of plan.ranges) if (range.cursor > 0) client.handed(range.id, range.cursor);
    for (const [id, cursor] of plan.skip ?? []) client.handed(id, cursor);
    for (const [id, cursor] of plan.level) client.handed(id, cursor);
    // Reading a store that commits on its own turns (sqlite) writes what was pending first, which
    // reaches the log while the history is read: what the history holds of it is not sent twice.
    if (client.group.log.end !== start) client.overlap = { until: client.group.log.end, through: plan.read };
    client.queue.push(
      JSON.stringify({
        type: "stream.ready",
        schema_version: SCHEMA_VERSION,
        subscribed: target.executions,
        replayed: plan.replayed,
        truncated: plan.truncated,
        dropped: plan.dropped,
        heartbeat_ms: this.limits.heartbeat_ms,
      }),
    );
    this.flush(client, WRITE_BATCH);
    if (!client.closed && !client.blocked && client.hasFrames) this.markDirty(client);
  }

  /** The adapter's drain signal: the socket can take more, so the queue is written. */
  drain(socket: LiveSocket): void {
    const client = this.clients.get(socket);
    if (!client) return;
    client.unblock();
    // Quiet: written at once (a batch; the writer goes on). During a flood, in the writer's slices.
    if (this.queuedSinceWrite <= TRICKLE && !this.inSlice) this.flush(client, WRITE_BATCH);
    if (!client.closed && !client.blocked && client.hasFrames) this.markDirty(client);
  }

  /** The adapter's pong signal: the connection's peer is there. */
  pong(socket: LiveSocket): void {
    const client = this.clients.get(socket);
    if (client) client.unanswered = null;
  }

  /**
   * The adapter's signal of a ping from the client (answered by the runtime itself): a client
   * sending more than CLIENT_PINGS_PER_HEARTBEAT in a heartbeat is closed. Only a pong answers the
   * server's own ping.
   */
  ping(socket: LiveSocket): void {
    const client = this.clients.get(socket);
    if (!client || client.closed) return;
    if (this.epoch - client.pingsSince >= TICKS_PER_HEARTBEAT) {
      client.pingsSince = this.epoch;
      client.pings = 0;
    }
    if (++client.pings > CLIENT_PINGS_PER_HEARTBEAT) this.forget(client, true, 1008, "too many pings");
  }

  /** The socket closed: forget it and its subscription. */
  close(socket: LiveSocket): void {
    const client = this.clients.get(socket);
    if (client) this.forget(client, false);
  }

  /**
   * Shutdown: every connection gets no more events, is told `stream.closing` with the reason, and
   * is closed once its socket has sent what it holds — at once for most, after at most
   * CLOSE_DRAIN_MS for one that fell behind. Resolves when every socket is closed.
   */
  closeAll(reason: string): Promise<void> {
    this.stopped = true;
    this.groups.unsubscribe();
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    if (this.turnTimer !== null) this.clock.clearTimeout(this.turnTimer);
    this.turnTimer = null;
    const frame = JSON.stringify({ type: "stream.closing", reason });
    const draining: LiveSocket[] = [];
    for (const client of [...this.clients.values()]) {
      // Nothing more is written to it; what it missed is stored, for a reconnect with `after`.
      this.forget(client, false);
      let result: SendResult = "dropped";
      try {
        // Buffered behind whatever the socket still holds, if it is full.
        result = client.socket.send(frame);
      } catch {
        // The socket is already gone; closing below is all that is left.
      }
      if (result !== "dropped" && client.socket.bufferedAmount() > 0) draining.push(client.socket);
      else closeSocket(client.socket, reason);
    }
    if (draining.length === 0) return Promise.resolve();
    const deadline = this.monotonic() + CLOSE_DRAIN_MS;
    return new Promise((resolve) => {
      const look = () => {
        const late = this.monotonic() >= deadline;
        for (let i = draining.length - 1; i >= 0; i--) {
          if (!late && draining[i]!.bufferedAmount() > 0) continue;
          closeSocket(draining[i]!, reason);
          draining.splice(i, 1);
        }
        if (draining.length === 0) resolve();
        else this.clock.setTimeout(look, CLOSE_POLL_MS);
      };
      this.clock.setTimeout(look, CLOSE_POLL_MS);
    });
  }

  /**
   * The channel's store listener: O(1) per event however many connections there are and whatever
   * they follow — one push to the log, or nothing for an event no connection follows. The event
   * is serialized on the writer's turns, when first sent (see makeFrame), unless the store
   * serialized it already (sqlite does, for its file).
   */
  private deliver(event: ExecutionEvent, json: string | undefined): void {
    // Events the store let go before they could be handed out (retention, while it could not
    // write: docs/durability.md) leave a gap in the sequences: said where it is, as stream.lagged.
    const id = event.execution_id;
    const before = this.lastDelivered.get(id);
    if (signedSequence(event) < 0) this.lastDelivered.delete(id);
    else this.lastDelivered.set(id, event.sequence);
    if (!this.groups.follows(id)) return;
    if (before !== undefined && event.sequence > before + 1) {
      const gap = { ...event, type: "execution.gap", sequence: event.sequence - 1 } as unknown as ExecutionEvent;
      this.groups.append(gap, gapNotice(id, before + 1, event.sequence - 1));
    }
    this.groups.append(event, json === undefined ? undefined : this.frameOf(event, json));
    if (!this.grown) {
      this.grown = true;
      this.scheduleWrite();
    }
    this.share();
  }

  /** A member whose buffer filled left its topic: it is written from the log once its socket drained. */
  private readonly leftTopic = (client: LiveClient) => {
    if (!client.blocked) this.markDirty(client);
  };

  /** Lists a client for the writer's next slice. */
  private markDirty(client: LiveClient): void {
    if (client.scheduled) return;
    client.scheduled = true;
    this.dirty.push(client);
    this.scheduleWrite();
  }

  private scheduleWrite(): void {
    if (this.writeScheduled || this.stopped) return;
    this.writeScheduled = true;
    this.waitingSince = this.monotonic();
    // A trickle (a few frames since the last write) goes out at once, as a microtask: a watcher
    // of a quiet execution sees each event within microseconds. A flood, or frames arriving
    // steadily (STEADY_MS), is written on turns of its own, so that it never holds up the
    // producer and goes out corked.
    if (this.queuedSinceWrite <= TRICKLE && this.monotonic() - this.lastWrite > STEADY_MS) queueMicrotask(this.writeTrickle);
    else setImmediate(this.writeSlice);
  }

  /** An event's frame from its JSON; the last one is kept, for the other groups that get the same event. */
  private frameOf(event: ExecutionEvent, json: string): string {
    if (event === this.memoEvent) return this.memoFrame;
    this.memoEvent = event;
    this.memoFrame = boundFrame(event, json, this.limits.frame_bytes);
    return this.memoFrame;
  }

  /** Makes the frame of an event the store did not serialize: when a log first writes it, and for history. */
  private readonly makeFrame = (event: ExecutionEvent): string => (event === this.memoEvent ? this.memoFrame : this.frameOf(event, JSON.stringify(event)));

  /**
   * Writes, corked, until the socket pushes back or `maxFrames` went out: its queue (refilled from
   * its history until that is sent), then the log from its position (or what it kept of it); then
   * `stream.lagged` if it lost events. A caught-up member joins its group's topic.
   */
  private flush(client: LiveClient, maxFrames = Number.POSITIVE_INFINITY): void {
    if (client.closed || client.blocked || client.planning !== null) return;
    // Reading history from a store that commits on its own turns (sqlite) hands out what was
    // pending, which appends to logs: no slice may start from there and write to this client again.
    const outer = this.flushing;
    this.flushing = true;
    try {
      this.flushNow(client, maxFrames);
    } finally {
      this.flushing = outer;
    }
    if (client.turn === "held" && client.replay.length === 0) this.endTurn(client);
    // A holder whose socket just filled while others wait: its turn is looked at again in TURN_STALL_MS.
    else if (client.turn === "held" && client.blocked && this.turnTimer === null) this.checkTurnsLater();
  }

  private flushNow(client: LiveClient, maxFrames: number): void {
    let lost = false;
    let unreadable: unknown = null;
    let budget = maxFrames;
    /** Sends one frame; false when writing must stop (backpressure, a lost socket, the budget). */
    const send = (frame: string): boolean => {
      budget--;
      const result = client.socket.send(frame);
      if (result === "ok") return budget > 0;
      if (result === "dropped") lost = true;
      else client.block(this.monotonic());
      return false;
    };
    const write = () => {
      for (;;) {
        while (client.head < client.queue.length) {
          const frame = client.queue[client.head++]!;
          if (!send(frame)) return;
        }
        if (client.replay.length === 0) break;
        // Every frame queued went out: forget them before the next page, or a socket that takes
        // many pages before it fills would keep them all until its client read again.
        client.compact();
        try {
          this.pageOfHistory(client);
        } catch (error) {
          unreadable = error;
          return;
        }
      }
      if (client.fast) return;
      const source = client.source;
      const end = client.sourceEnd;
      const ids = client.group.ids;
      while (client.cursor < end) {
        // A run of entries from one chunk at a time.
        const chunk = source.chunkAt(client.cursor);
        const stop = Math.min(end, chunk.start + chunk.size);
        // A chunk of one execution it does not follow (another's flood) is passed in one step.
        if (ids !== null && typeof chunk.single === "string" && !ids.has(chunk.single)) {
          client.cursor = stop;
          continue;
        }
        for (let i = client.cursor - chunk.start; client.cursor < stop; i++) {
          const position = client.cursor++;
          const id = chunk.ids[i]!;
          const sequence = chunk.sequences[i]!;
          if (!client.takes(position, id, sequence)) continue;
          client.handed(id, sequence);
          if (!send(chunk.frame(i))) return;
        }
      }
    };
    const frames = client.waiting + (client.replay.length > 0 ? 2 : 0) + (client.fast ? 0 : client.sourceEnd - client.cursor);
    // Corking pays off from the second frame; a lone frame (the common case at low rates) goes straight out.
    if (client.socket.cork && frames > 1 && budget > 1) client.socket.cork(write);
    else write();
    // Only what it was sent makes it busy: passing entries of what it does not follow is not news to it.
    if (budget < maxFrames) client.seen = this.epoch;
    if (lost) return this.forget(client, true, 1011, "send failed");
    if (unreadable !== null) return this.unreadable(client, unreadable);
    client.compact();
    if (client.overlap !== null && client.cursor >= client.overlap.until) client.overlap = null;
    if (client.blocked || client.closed || client.waiting > 0 || client.replay.length > 0) return;
    if (client.view !== null && client.cursor >= client.view.end) this.sendResumed(client);
    if (!client.blocked && !client.closed && client.view === null) this.groups.join(client);
  }

  /**
   * Queues the next page of a client's history (at most REPLAY_PAGE events, about REPLAY_BYTES).
   * History the store dropped since the connection opened (a retention bound reached while it
   * waited) is lost to it: it is told so in order, by a `stream.lagged` where the gap is.
   */
  private pageOfHistory(client: LiveClient): void {
    const range = client.replay[0]!;
    const page = this.store.events(range.id, range.after, REPLAY_PAGE);
    const from = Math.min(range.through + 1, page === null ? Number.POSITIVE_INFINITY : Math.max(range.after + 1, page.retained_from));
    if (from > range.after + 1) {
      const dropped = from - 1 - range.after;
      // Gone from the store altogether (forgotten past a retention bound while it waited): there is
      // no snapshot to reload, so the notice does not send the client to one.
      const gone = page === null ? `Execution ${range.id} was forgotten by the store (a retention bound: executions_retained or executions_retained_bytes) before its history could be sent: ${dropped} event(s) of it are lost to this connection, and it has no snapshot any more.` : undefined;
      client.queue.push(lagNotice(dropped, { [range.id]: client.gotOf(range.id) }, gone));
      (client.announced ??= new Map()).set(range.id, from - 1);
      range.after = from - 1;
    }
    let bytes = 0;
    for (const event of page?.events ?? []) {
      if (event.sequence <= range.after) continue;
      if (event.sequence > range.through || bytes > REPLAY_BYTES) break;
      const frame = this.makeFrame(event);
      client.queue.push(frame);
      client.handed(event.execution_id, signedSequence(event));
      range.after = event.sequence;
      bytes += frame.length;
    }
    if (range.after >= range.through || page === null || page.events.length === 0) client.replay.shift();
  }

  /**
   * A connection whose history could not be read is closed saying so (1011). A store whose file is
   * damaged says it in its health, so that is all; any other error is thrown on, once the
   * connection is let go, for the server's log.
   */
  private unreadable(client: LiveClient, error: unknown): void {
    const damaged = error instanceof StoreDamagedError;
    this.forget(client, true, 1011, damaged ? "history unreadable: the store file is damaged (see /healthz)" : "history unreadable");
    if (!damaged) throw error;
  }

  /** A log member that wrote everything it kept is told what it lost, and resumes at the log's end. */
  private sendResumed(client: LiveClient): void {
    const { dropped, lastSequence } = this.groups.resume(client);
    // Nothing it lacks (all it missed was at or below its cursor): it just goes on.
    if (dropped > 0) this.sendNotice(client, dropped, lastSequence);
  }

  private sendNotice(client: LiveClient, dropped: number, lastSequence: Record<string, number>): void {
    let result: SendResult = "ok";
    for (const notice of lagNotices(dropped, lastSequence, this.limits.frame_bytes)) {
      result = client.socket.send(notice);
      if (result === "dropped") return this.forget(client, true, 1011, "send failed");
    }
    if (result === "backpressure") client.block(this.monotonic());
  }

  private forget(client: LiveClient, closeSocket: boolean, code = 1000, reason = ""): void {
    if (client.closed) return;
    client.closed = true;
    this.clients.delete(client.socket);
    this.groups.release(client);
    this.endTurn(client);
    if (closeSocket) {
      try {
        client.socket.close(code, reason);
      } catch {
        // Closing a socket that already went away is not an error worth reporting.
      }
    }
    if (this.clients.size === 0 && this.timer !== null) {
      this.clock.clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private armHeartbeat(): void {
    if (this.timer !== null || this.stopped || this.clients.size === 0) return;
    const tick = Math.max(1, Math.floor(this.limits.heartbeat_ms / TICKS_PER_HEARTBEAT));
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      this.heartbeat();
      this.armHeartbeat();
    }, tick);
  }

  /** One tick: a quiet connection gets a ping and a `stream.heartbeat`; a blocked one whose buffer emptied is drained. */
  private heartbeat(): void {
    this.epoch += 1;
    let frame: string | null = null;
    for (const client of [...this.clients.values()]) {
      // Nothing before its stream.ready; but one waiting for its turn is pinged (no frame), so
      // that a peer that went away does not keep its place in line.
      const waiting = client.turn === "waiting";
      if (client.planning !== null && !waiting) continue;
      if (client.blocked) {
        // A missed drain signal must not stall a connection forever.
        if (client.socket.bufferedAmount() === 0) this.drain(client.socket);
        // Still owed history and reading none of it for a heartbeat: closed, so that its plan
        // (an entry per execution owed) and its place are not held for a peer that is gone.
        else if (client.replay.length > 0 && this.monotonic() - client.blockedSince! >= this.limits.heartbeat_ms) this.forget(client, true, 1013, "not reading its history");
        continue;
      }
      if (client.socket.answersPings && client.unanswered !== null && this.epoch - client.unanswered >= UNANSWERED_TICKS) {
        this.forget(client, true, 1001, "no answer to ping");
        continue;
      }
      const seen = client.fast ? Math.max(client.seen, client.group.seen) : client.seen;
      if (this.epoch - seen <= TICKS_PER_HEARTBEAT || client.hasFrames) continue;
      client.seen = this.epoch;
      client.unanswered ??= this.epoch;
      try {
        client.socket.ping();
      } catch {
        // The text frame below (or the close of one waiting) finds out whether the socket is still there.
      }
      if (waiting) continue;
      frame ??= JSON.stringify({ type: "stream.heartbeat", timestamp: new Date(this.clock.now()).toISOString() });
      const result = client.socket.send(frame);
      if (result === "dropped") this.forget(client, true, 1011, "send failed");
      else if (result === "backpressure") client.block(this.monotonic());
    }
  }
}

/** Closes a socket on shutdown (1001, going away); one that already went away is no error. */
function closeSocket(socket: LiveSocket, reason: string): void {
  try {
    socket.close(1001, reason);
  } catch {
    // Closing a socket that already went away is not an error worth reporting.
  }
}

/**
 * The `stream.lagged` of events `first`..`last` of `id` that the store let go before they were
 * handed to anyone (retention reached while it could not write): every follower lost them.
 */
function gapNotice(id: string, first: number, last: number): string {
  return lagNotice(
    last - first + 1,
    { [id]: first - 1 },
    `Events ${first} to ${last} of ${id} were dropped by its retention before they could be sent (the store could not write meanwhile); reload the snapshot and the history after last_sequence.`,
  );
}

/**
 * The `stream.lagged` notice of a connection that lost `dropped` events, naming per execution the
 * last sequence it got, as frames of at most `frameBytes` (docs/protocol.md): one that lost events
 * of more executions than one frame names (a burst of thousands of them) gets consecutive notices,
 * the first with the count and the others with `dropped: 0`, together naming every execution.
 */
function lagNotices(dropped: number, lastSequence: Record<string, number>, frameBytes: number): string[] {
  const whole = lagNotice(dropped, lastSequence);
  if (Buffer.byteLength(whole) <= frameBytes) return [whole];
  const message = (count: number) => `This connection fell behind and ${count} event(s) were dropped for it alone; the executions it lost events of are named over several stream.lagged frames, this one and those right after it: reload the snapshot and the history after last_sequence of each.`;
  const notices: string[] = [];
  let part: Record<string, number> = {};
  // A frame's bytes without its members, and each member's: an execution id and a sequence are ASCII.
  const empty = (count: number) => Buffer.byteLength(lagNotice(count, {}, message(count)));
  let bytes = empty(dropped);
  let members = 0;
  const close = () => {
    const count = notices.length === 0 ? dropped : 0;
    notices.push(lagNotice(count, part, message(count)));
    part = {};
    members = 0;
    bytes = empty(0);
  };
  for (const [id, sequence] of Object.entries(lastSequence)) {
    const member = JSON.stringify(id).length + 1 + String(sequence).length + (members > 0 ? 1 : 0);
    if (members > 0 && bytes + member > frameBytes) close();
    part[id] = sequence;
    bytes += member;
    members++;
  }
  close();
  return notices;
}

/** A `stream.lagged` notice: how many events the connection lost, and per execution the last sequence it got. */
function lagNotice(dropped: number, lastSequence: Record<string, number>, message = `This connection fell behind and ${dropped} event(s) were dropped for it alone; reload the snapshot and the history after last_sequence.`): string {
  return JSON.stringify({ type: "stream.lagged", dropped, last_sequence: lastSequence, message });
}

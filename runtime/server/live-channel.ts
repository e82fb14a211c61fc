import type { ExecutionEvent } from "../execution/protocol.ts";
import { SCHEMA_VERSION } from "../execution/protocol.ts";
import type { Limits } from "../execution/limits.ts";
import type { ExecutionStore } from "../store/store.ts";
import { LiveClient, type LiveGroup } from "./_live-client.ts";
import { LiveGroups, signedSequence } from "./_live-groups.ts";
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
// Under a flood, every slice (on its own turn or on the append path) is held to this share of the
// time since the last one ended: the writer's work — sends, publishes, and the drains of sockets
// that were full — stays a bounded part of the main thread's however many watchers there are (the
// work they watch slowed by about an eighth of the main thread at most; they lag instead).
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
// The heartbeat tick is a quarter of heartbeat_ms: a connection quiet for 5 ticks (more than
// heartbeat_ms, at most 1.25 × it) gets a heartbeat. One timer serves every connection.
const TICKS_PER_HEARTBEAT = 4;

/**
 * The live channel (docs/protocol.md), runtime-agnostic: subscribes each connection through the store
 * (subscribe-then-replay is the store's job), writes `stream.ready` first, then history, then live
 * events. Each connection has a queue bounded in bytes (subscriber_queue_bytes); a slow one loses events alone and is told
 * `stream.lagged`. The store's listener does O(1) work and the store's serialized JSON is shared.
 */
export class LiveChannel {
  private readonly clients = new Map<LiveSocket, LiveClient>();
  private readonly store: ExecutionStore;
  private readonly limits: Limits;
  private readonly clock: LiveClock;
  private epoch = 0;
  private timer: unknown = null;
  private stopped = false;
  // The frame of the event being fanned out: every subscriber of one append gets the same string.
  private memoEvent: ExecutionEvent | null = null;
  private memoFrame = "";
  // Clients and topic groups with frames to write. The store's listener only queues; the writer
  // sends in slices of SLICE_MS on their own turn of the event loop (setImmediate), never on the
  // append path: fan-out to many clients costs the producer one scheduled task, not the sends.
  private dirty: LiveClient[] = [];
  private outboxes: LiveGroup[] = [];
  // Groups whose log grew while they had members writing from it: the writer lists those members.
  private listed: LiveGroup[] = [];
  private writeScheduled = false;
  private queuedSinceWrite = 0;
  private lastWrite = Number.NEGATIVE_INFINITY;
  // When the writer last ran or, if later, when frames began to wait for it (see share()).
  private waitingSince = 0;
  // True while a slice runs: a slice written from the append path must not start another.
  private inSlice = false;
  // performance.now() when the last slice ended (see slice's budget).
  private sliceEnded = 0;
  /** The trickle path: a microtask that writes only if what came since is still a trickle. */
  private readonly writeTrickle = () => {
    if (this.queuedSinceWrite <= TRICKLE) return this.writeSlice();
    // A flood arrived in the same tick (a worker's batch): it gets a turn of its own instead.
    setImmediate(this.writeSlice);
  };
  private readonly writeSlice = () => {
    // Held while the slice runs: a client put back in line below must not schedule a write of its own.
    this.writeScheduled = true;
    this.slice(true);
    // What is left waits for a turn of its own, never another microtask: a flood must not be
    // written in one go on the producer's path.
    if ((this.dirty.length > 0 || this.outboxes.length > 0 || this.listed.length > 0) && !this.stopped) setImmediate(this.writeSlice);
    else this.writeScheduled = false;
  };

  /**
   * Writes for at most SLICE_MS: topics first, then round after round over the waiting clients.
   * `mayMove` is false on the append path (see share): a client moves from its own subscription
   * to its group's log only between fan-outs.
   */
  private slice(mayMove: boolean): void {
    this.inSlice = true;
    const started = performance.now();
    // Frames arriving faster than a trickle: the producer is busy, and the slice gets its share.
    const budget = this.queuedSinceWrite <= TRICKLE ? SLICE_MS : Math.min(SLICE_MS, Math.max(SLICE_MS / 20, (started - this.sliceEnded) * SHARE));
    const until = started + budget;
    this.queuedSinceWrite = 0;
    this.lastWrite = this.waitingSince = this.monotonic();
    // Topics first: one publish serves every caught-up member of a group.
    while (this.outboxes.length > 0) {
      const group = this.outboxes[0]!;
      if (!this.groups.publishPending(group, until, this.leftTopic)) break;
      group.scheduled = false;
      this.outboxes.shift();
    }
    // Members behind in a log that grew: in line for their sends (O(members) per turn, not per event).
    const touched = new Set<LiveGroup>(this.listed);
    for (const group of this.listed) {
      group.listed = false;
      for (const client of group.behind) if (!client.blocked && client.hasFrames) this.markDirty(client);
      for (const client of group.lagging) if (!client.blocked) this.markDirty(client);
    }
    this.listed = [];
    // Round after round over the waiting clients, WRITE_BATCH frames each, until the slice is used.
    while (this.dirty.length > 0 && performance.now() <= until) {
      const clients = this.dirty;
      this.dirty = [];
      let i = 0;
      for (; i < clients.length && performance.now() <= until; i++) {
        const client = clients[i]!;
        client.scheduled = false;
        this.flush(client, mayMove, WRITE_BATCH);
        if (client.inLog) touched.add(client.group);
        // Still frames to write and nothing in the way: back in line behind the others.
        if (!client.closed && !client.blocked && !client.opening && client.hasFrames) this.markDirty(client);
      }
      // Those the slice did not reach keep their place at the front (still marked scheduled).
      if (i < clients.length) {
        this.dirty = [...clients.slice(i), ...this.dirty];
        break;
      }
    }
    // Frames every member of a group has written need not be held any longer.
    for (const group of touched) if (group.members > 0) this.groups.trim(group);
    this.inSlice = false;
    this.sliceEnded = performance.now();
  }

  /**
   * The append path's look at the writer, every LOOK_EVERY frames: when frames have waited more
   * than WRITER_GAP_MS (the loop has not turned: a flood), one slice is written here and now.
   */
  private share(): void {
    if ((++this.queuedSinceWrite & (LOOK_EVERY - 1)) !== 0 || this.inSlice || this.stopped) return;
    if (this.monotonic() - this.waitingSince > WRITER_GAP_MS) this.slice(false);
  }
  private readonly groups: LiveGroups;
  private readonly monotonic: () => number;

  constructor(options: LiveChannelOptions) {
    this.store = options.store;
    this.limits = options.limits;
    this.clock = options.clock ?? systemLiveClock;
    this.monotonic = this.clock.monotonic?.bind(this.clock) ?? (() => performance.now());
    // A group's subscription is live: it takes what is handed out from now on, and each member
    // replays its own history before it reads from the log (see open and flush).
    this.groups = new LiveGroups(
      (group) => this.store.subscribe({ executions: group.target.executions, live: true }, (event, json) => this.deliverGroup(group, event, json)),
      this.limits.subscriber_queue_bytes,
    );
  }

  /** True while the writer has frames left to send or publish (tests wait on it; nothing else should). */
  get writing(): boolean {
    return this.dirty.length > 0 || this.outboxes.length > 0 || this.listed.length > 0;
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
    return checkLiveRequest(params, upgrade, { store: this.store, limits: this.limits, connections: this.clients.size, stopping: this.stopped });
  }

  /** Starts delivery on an upgraded socket: `stream.ready`, the replayed history, then live events. */
  open(socket: LiveSocket, target: LiveTarget): void {
    if (this.stopped || this.clients.size >= this.limits.live_connections) {
      // Connections that raced past check() are still held to the limit.
      socket.close(1013, this.stopped ? "server stopping" : "too many live connections");
      return;
    }
    // The group (and its subscription) first: the client's own subscription, made next, replays
    // everything the group's log began after.
    const client = new LiveClient(socket, this.groups.groupFor(target));
    client.cursorsAhead = this.cursorsAhead(target);
    this.clients.set(socket, client);
    client.queue.push(""); // the ready frame's place: it must precede the replay that subscribe writes
    let subscription;
    try {
      subscription = this.store.subscribe({ executions: target.executions, after: target.after }, (event, json) => this.deliver(client, event, json));
    } catch (error) {
      this.forget(client, true, 1011, "subscription failed");
      throw error;
    }
    client.subscription = subscription;
    client.queue[0] = JSON.stringify({
      type: "stream.ready",
      schema_version: SCHEMA_VERSION,
      subscribed: target.executions,
      replayed: subscription.replayed,
      truncated: subscription.truncated,
      heartbeat_ms: this.limits.heartbeat_ms,
    });
    client.replayEnd = client.queue.length;
    client.opening = false;
    client.seen = this.epoch;
    this.flush(client, true);
    this.armHeartbeat();
  }

  /** The adapter's drain signal: the socket can take more, so the queue is written. */
  drain(socket: LiveSocket): void {
    const client = this.clients.get(socket);
    if (!client) return;
    client.blocked = false;
    // Quiet: written at once. During a flood, in the writer's slices, like every other send.
    if (this.queuedSinceWrite <= TRICKLE && !this.inSlice) this.flush(client, true);
    else this.markDirty(client);
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
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
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

  /** A group's store listener: O(1) per event for all of its members, however far behind. */
  private deliverGroup(group: LiveGroup, event: ExecutionEvent, json: string): void {
    const frame = event === this.memoEvent ? this.memoFrame : this.frameOf(event, json);
    // A busy topic is no quiet connection: its members get no heartbeat (see heartbeat()).
    group.seen = this.epoch;
    this.groups.append(group, event, frame);
    if (group.pending > 0 && !group.scheduled) {
      group.scheduled = true;
      this.outboxes.push(group);
      this.scheduleWrite();
    }
    if ((group.behind.size > 0 || group.lagging.size > 0) && !group.listed) {
      group.listed = true;
      this.listed.push(group);
      this.scheduleWrite();
    }
    this.share();
  }

  /** The named executions whose stored history ends before `after` (see LiveClient.cursorsAhead); null when none. */
  private cursorsAhead(target: LiveTarget): Set<string> | null {
    if (target.after === undefined || target.after === 0) return null;
    // Every execution's sequences start at 1: for all of them, a cursor past 0 may be ahead.
    if (target.executions === "all") return new Set(["*"]);
    const ahead = target.executions.filter((id) => (this.store.get(id)?.last_sequence ?? 0) < target.after!);
    return ahead.length === 0 ? null : new Set(ahead);
  }

  /** A client's own store listener (until it reads from its group's log): O(1) per event, never waits for a socket. */
  private deliver(client: LiveClient, event: ExecutionEvent, json: string): void {
    if (client.closed || client.inLog) return;
    if (client.cursorsAhead?.delete(event.execution_id) && client.cursorsAhead.size === 0) client.cursorsAhead = null;
    const frame = event === this.memoEvent ? this.memoFrame : this.frameOf(event, json);
    if (client.opening) {
      client.queue.push(frame);
      client.handed(event.execution_id, signedSequence(event));
      return;
    }
    // Frames wait while the socket pushes back or the writer has not reached this client yet:
    // both count against the bound, so a client the writer cannot keep up with lags alone.
    if (client.lagFrom !== null || client.liveBytes + frame.length > this.limits.subscriber_queue_bytes) {
      this.drop(client, event);
      return;
    }
    client.pushLive(frame);
    client.handed(event.execution_id, signedSequence(event));
    if (client.blocked) return;
    this.markDirty(client);
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

  private frameOf(event: ExecutionEvent, json: string): string {
    this.memoEvent = event;
    this.memoFrame = boundFrame(event, json, this.limits.frame_bytes);
    return this.memoFrame;
  }

  private drop(client: LiveClient, event: ExecutionEvent): void {
    client.dropped += 1;
    client.lagFrom ??= new Map();
    if (!client.lagFrom.has(event.execution_id)) client.lagFrom.set(event.execution_id, client.gotOf(event.execution_id));
  }

  /**
   * Writes waiting frames, corked, until the socket pushes back: its own queue, then the log from
   * its position (or what it kept of it); then `stream.lagged` if events were lost for it. A client
   * whose own queue is written moves to its group's log, and a caught-up log member joins the
   * group's topic — both only between fan-outs (`mayJoin`): moving in the middle of one could
   * deliver that event twice.
   */
  private flush(client: LiveClient, mayJoin: boolean, maxFrames = Number.POSITIVE_INFINITY): void {
    if (client.closed || client.blocked || client.opening) return;
    let lost = false;
    let budget = maxFrames;
    const write = () => {
      const { queue, socket } = client;
      while (client.head < queue.length) {
        if (budget-- <= 0) return;
        const result = socket.send(client.next());
        if (result === "ok") continue;
        if (result === "dropped") lost = true;
        else client.blocked = true;
        return;
      }
      if (!client.inLog || client.fast) return;
      const source = client.source;
      const end = client.sourceEnd;
      while (client.cursor < end) {
        // A run of entries from one chunk at a time.
        const chunk = source.chunkAt(client.cursor);
        const stop = Math.min(end, chunk.start + chunk.frames.length);
        for (let i = client.cursor - chunk.start; client.cursor < stop; i++) {
          if (budget-- <= 0) return;
          client.cursor++;
          client.handed(chunk.ids[i]!, chunk.sequences[i]!);
          const result = socket.send(chunk.frames[i]!);
          if (result === "ok") continue;
          if (result === "dropped") lost = true;
          else client.blocked = true;
          return;
        }
      }
    };
    const frames = client.waiting + (client.inLog && !client.fast ? client.sourceEnd - client.cursor : 0);
    // Corking pays off from the second frame; a lone frame (the common case at low rates) goes straight out.
    if (client.socket.cork && frames > 1 && budget > 1) client.socket.cork(write);
    else write();
    client.seen = this.epoch;
    if (lost) return this.forget(client, true, 1011, "send failed");
    client.compact();
    if (client.blocked || client.closed || client.waiting > 0) return;
    if (client.lagFrom !== null) this.sendLagged(client);
    else if (client.view !== null && client.cursor >= client.view.end) this.sendResumed(client);
    if (!mayJoin || client.blocked || client.closed || client.lagFrom !== null || client.cursorsAhead !== null) return;
    if (!client.inLog) this.groups.enterLog(client);
    if (client.view === null) this.groups.join(client);
  }

  /** A log member that wrote everything it kept is told what it lost, and resumes at the log's end. */
  private sendResumed(client: LiveClient): void {
    const { dropped, lastSequence } = this.groups.resume(client);
    this.sendNotice(client, dropped, lastSequence);
  }

  private sendLagged(client: LiveClient): void {
    const dropped = client.dropped;
    const lastSequence = Object.fromEntries(client.lagFrom!);
    client.dropped = 0;
    client.lagFrom = null;
    this.sendNotice(client, dropped, lastSequence);
  }

  private sendNotice(client: LiveClient, dropped: number, lastSequence: Record<string, number>): void {
    const frame = JSON.stringify({
      type: "stream.lagged",
      dropped,
      last_sequence: lastSequence,
      message: `This connection fell behind and ${dropped} event(s) were dropped for it alone; reload the snapshot and the history after last_sequence.`,
    });
    const result = client.socket.send(frame);
    if (result === "dropped") this.forget(client, true, 1011, "send failed");
    else if (result === "backpressure") client.blocked = true;
  }

  private forget(client: LiveClient, closeSocket: boolean, code = 1000, reason = ""): void {
    if (client.closed) return;
    client.closed = true;
    client.subscription?.unsubscribe();
    this.clients.delete(client.socket);
    this.groups.release(client);
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
      if (client.blocked) {
        // A missed drain signal must not stall a connection forever.
        if (client.socket.bufferedAmount() === 0) this.drain(client.socket);
        continue;
      }
      const seen = client.fast ? Math.max(client.seen, client.group.seen) : client.seen;
      if (this.epoch - seen <= TICKS_PER_HEARTBEAT || client.hasFrames) continue;
      frame ??= JSON.stringify({ type: "stream.heartbeat", timestamp: new Date(this.clock.now()).toISOString() });
      client.seen = this.epoch;
      try {
        client.socket.ping();
      } catch {
        // The text frame below finds out whether the socket is still there.
      }
      const result = client.socket.send(frame);
      if (result === "dropped") this.forget(client, true, 1011, "send failed");
      else if (result === "backpressure") client.blocked = true;
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

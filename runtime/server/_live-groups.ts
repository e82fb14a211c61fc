import type { ExecutionEvent } from "../execution/protocol.ts";
import { LiveClient, LiveGroup } from "./_live-client.ts";
import { executionAt, frameAt, LiveLog, LogView, sequenceAt, type FrameMaker } from "./_live-log.ts";
import { estimatedFrameBytes } from "./live-frame.ts";
import type { Subscription } from "../store/store.ts";
import type { LiveTopics } from "./live-socket.ts";
import type { LiveTarget } from "./live-target.ts";

// A fast (topic) member whose socket buffers more than this has fallen behind: it leaves the topic
// and is written from the log by its own sends, at its own pace.
const FAST_BUFFER_BYTES = 256 * 1024;
// Bytes published to a topic between two looks at its members' buffers: a member that stopped
// reading holds at most FAST_BUFFER_BYTES + CHECK_BYTES (+ one frame) in its socket before it is
// seen and leaves, whatever the flood (docs/protocol.md, "Backpressure").
const CHECK_BYTES = 64 * 1024;
// More frames than this waiting for a topic is a flood, not a trickle: a publish writes to each
// member's socket at once (a system call each, per frame), while a member's own corked sends
// write a batch of frames in one. So the members leave the topic and are written from the log in
// batches; they join it again once caught up.
const TOPIC_BURST = 8;
// Appends between two looks for what the log may let go of.
const TRIM_EVERY = 1024;

/**
 * The live channel's groups (docs/protocol.md, "Backpressure"): connections following the same
 * target. Every connection, whatever it follows, reads one log of frames fed by one store
 * subscription: storing an event costs the channel one push, however many connections there are,
 * however many different things they follow and however far behind they are; members are
 * written from the log on the channel's writer turns, each taking the entries of what its group
 * follows. A member more than subscriber_queue_bytes behind keeps what it had (a view of the
 * log's chunks, not a copy) and lags alone, and what all such members keep is bounded in its
 * turn (lagging_kept_bytes): the stretch kept longest goes first. A runtime's native fan-out (Bun
 * topics) serves the caught-up members of a group with one publish each.
 */
export class LiveGroups {
  private readonly groups = new Map<string, LiveGroup>();
  private nextTopic = 1;
  private topics: LiveTopics | null = null;
  /** The channel's log: every followed event, once. */
  readonly log: LiveLog;
  /**
   * The store subscription feeding the log, from the channel's start to its end: kept while no
   * connection is open, so that the channel sees every event handed out and a gap in them is one
   * the store left (a subscription dropped with the last connection and made again with the next
   * made the events between read as a gap, and forgot a real one; live-channel testers, session 41).
   */
  private subscription: Subscription | null;
  /** Groups following every execution, and for each named execution how many groups follow it. */
  private followingAll = 0;
  private readonly followers = new Map<string, number>();
  /** For each execution a group names, the last sequence appended (what a lag of its members is counted from). */
  private readonly lastAppended = new Map<string, number>();
  /** The lowest position a member still reads from the log (stale-low between looks, never above). */
  private lowest = 0;
  /** Members that keep a view, the longest-kept first, and the bytes their views count for together. */
  private readonly keeping = new Set<LiveClient>();
  private keptBytes = 0;

  /**
   * @param subscribe the channel's live store subscription to every execution, made at once and
   *   kept until unsubscribe() (its listener appends to the log, see append)
   * @param bound subscriber_queue_bytes: how far behind the log end a member may fall
   * @param keptBound lagging_kept_bytes: what the members that fell further keep, all together
   * @param makeFrame makes an event's frame for the log
   */
  constructor(
    subscribe: () => Subscription,
    private readonly bound: number,
    private readonly keptBound: number,
    makeFrame?: FrameMaker,
  ) {
    this.log = new LiveLog(makeFrame);
    this.subscription = subscribe();
  }

  /** Ends the store subscription: the channel is closing. */
  unsubscribe(): void {
    this.subscription?.unsubscribe();
    this.subscription = null;
  }

  /** Lets caught-up members of a group share one topic of the runtime's native fan-out. */
  useTopics(topics: LiveTopics): void {
    this.topics = topics;
  }

  /** Every group, for the writer's look at who has something to write. */
  all(): Iterable<LiveGroup> {
    return this.groups.values();
  }

  /** The group of a new connection: made for the first (the store subscription with the first of all). */
  groupFor(target: LiveTarget): LiveGroup {
    // `after` only shapes the replay: once caught up, the same target means the same live events.
    const key = target.executions === "all" ? "*" : [...target.executions].sort().join(",");
    let group = this.groups.get(key);
    if (!group) {
      group = new LiveGroup(key, target, `docket.live.${this.nextTopic++}`, this.log);
      this.groups.set(key, group);
      if (group.ids === null) this.followingAll++;
      else for (const id of group.ids) this.followers.set(id, (this.followers.get(id) ?? 0) + 1);
    }
    group.members++;
    return group;
  }

  /** True when some group follows the execution `id`: only its events go into the log. */
  follows(id: string): boolean {
    return this.followingAll > 0 || this.followers.has(id);
  }

  /**
   * Appends an event to the log, with its frame if the store serialized it already: O(1), but
   * when a member would fall more than the bound behind — then each such member is made to lag
   * (at most once per lag episode each). Frames count by their estimated length, made or not, so
   * the bound means the same whichever store and whenever the frame is made. A member with
   * nothing waiting takes the frame whatever its size (see beyond).
   */
  append(event: ExecutionEvent, frame: string | undefined): void {
    const { log } = this;
    const length = estimatedFrameBytes(event);
    // `lowest` is the furthest behind (or lower): nothing waits there, nothing waits for anyone.
    if (beyond(log.bytesFrom(this.lowest), length, this.bound)) this.lagBeyond(length);
    log.append(event, frame, length);
    if (this.followers.has(event.execution_id)) this.lastAppended.set(event.execution_id, event.sequence);
    if (log.end % TRIM_EVERY === 0) this.trim();
  }

  /** Members whose backlog with `incoming` would pass the bound keep what they have and lag from here. */
  private lagBeyond(incoming: number): void {
    const { log } = this;
    for (const group of this.groups.values()) {
      if (group.fast.size > 0 && beyond(log.bytesFrom(group.published), incoming, this.bound)) {
        // The topic itself fell that far behind (the writer and the producer's help could not keep
        // up): its members lag, each keeping what is unpublished.
        for (const client of [...group.fast]) this.leave(client, client.blocked);
      }
      for (const client of [...group.behind]) {
        if (!beyond(log.bytesFrom(client.cursor), incoming, this.bound)) continue;
        group.behind.delete(client);
        group.lagging.add(client);
        const kept = log.bytesFrom(client.cursor);
        client.view = log.view(client.cursor);
        // What it loses is counted by the log's lag epochs when it follows everything; following
        // named executions, from what was appended of each so far (exact however many lag at once).
        if (group.ids === null) client.lag = log.startLag();
        else client.lagFrom = new Map([...group.ids].map((id) => [id, this.lastAppended.get(id) ?? 0]));
        this.keep(client, kept);
      }
    }
    this.trim();
  }

  /**
   * Counts a new view in what lagging members keep: past lagging_kept_bytes, views are given up,
   * the longest-kept first (most likely a client that stopped reading long ago), this one last.
   * A view counts for the stretch of the log it held when made, until its member resumes or goes;
   * stretches that overlap (members that stalled at the same moment) hold the same chunks and
   * count once: counted for each, three members stalled together were given up at a third of the
   * bound (a tester's finding).
   */
  private keep(client: LiveClient, bytes: number): void {
    client.keptBytes = bytes;
    client.keptUntil = this.log.bytes;
    this.keeping.add(client);
    this.keptBytes = keptTogether(this.keeping);
    for (const oldest of this.keeping) {
      if (this.keptBytes <= this.keptBound) break;
      this.giveUp(oldest);
    }
  }

  /** A member's view no longer counts (it resumed, went, or was given up). */
  private unkeep(client: LiveClient): void {
    if (!this.keeping.delete(client)) return;
    client.keptBytes = 0;
    this.keptBytes = keptTogether(this.keeping);
  }

  /**
   * Gives up what a lagging member kept and has not been written: it loses those events too, as
   * if they had come after its lag began, and is told so in the same notice once it reads again.
   * Its entries are passed as its writes would pass them (LiveClient.takes).
   */
  private giveUp(client: LiveClient): void {
    const view = client.view!;
    const ids = client.group.ids;
    const spans = client.lostBefore?.spans ?? new Map<string, { first: number; last: number }>();
    let dropped = client.lostBefore?.dropped ?? 0;
    while (client.cursor < view.end) {
      const chunk = view.chunkAt(client.cursor);
      const stop = Math.min(view.end, chunk.start + chunk.size);
      // A chunk of one execution's flood is passed in one step: followed or not, its sequences run on.
      if (typeof chunk.single === "string" && client.skip === null && client.overlap === null) {
        if (ids === null || ids.has(chunk.single)) {
          const first = Math.abs(chunk.sequences[client.cursor - chunk.start]!);
          const last = Math.abs(chunk.sequences[stop - 1 - chunk.start]!);
          const span = spans.get(chunk.single);
          if (span === undefined) spans.set(chunk.single, { first, last });
          else span.last = last;
          dropped += stop - client.cursor;
        }
        client.cursor = stop;
        continue;
      }
      for (let i = client.cursor - chunk.start; client.cursor < stop; i++) {
        const position = client.cursor++;
        const id = chunk.ids[i]!;
        const sequence = chunk.sequences[i]!;
        if (!client.takes(position, id, sequence)) continue;
        const at = Math.abs(sequence);
        const span = spans.get(id);
        if (span === undefined) spans.set(id, { first: at, last: at });
        else span.last = at;
        dropped++;
      }
    }
    if (client.lagFrom !== null) {
      // A member of named executions counts its loss from where it has each up to.
      for (const [id, { first }] of spans) client.lagFrom.set(id, Math.min(client.lagFrom.get(id) ?? 0, first - 1));
    } else if (spans.size > 0) client.lostBefore = { dropped, spans };
    client.view = new LogView([], view.end);
    this.unkeep(client);
  }

  /** Lets go of the log before the lowest position a member still reads. */
  trim(): void {
    let lowest = this.log.end;
    for (const group of this.groups.values()) {
      if (group.fast.size > 0) lowest = Math.min(lowest, group.published);
      for (const client of group.behind) if (client.cursor < lowest) lowest = client.cursor;
    }
    this.lowest = lowest;
    this.log.trim(lowest);
  }

  /** A new connection takes its place in the channel's log: `position`, what its history ends before. */
  enter(client: LiveClient, position: number): void {
    client.cursor = position;
    client.group.behind.add(client);
  }

  /**
   * A lagging member that wrote everything it kept: it resumes at the log's end. Returns what its
   * notice says: how many events it lost, and for each execution it lost events of, the last
   * sequence it got.
   */
  resume(client: LiveClient): { dropped: number; lastSequence: Record<string, number> } {
    const group = client.group;
    let dropped: number;
    let lost: Map<string, { first: number; last: number }>;
    if (client.lagFrom === null) {
      ({ dropped, lost } = group.log.endLag(client.lag!));
      // What it kept and was given up before it was written (see giveUp) came before all that.
      if (client.lostBefore !== null) {
        dropped += client.lostBefore.dropped;
        for (const [id, span] of client.lostBefore.spans) {
          const after = lost.get(id);
          lost.set(id, after === undefined ? span : { first: span.first, last: after.last });
        }
        client.lostBefore = null;
      }
    } else {
      // The log holds what other groups follow too (and an epoch merged into an older one, see
      // LiveLog.startLag, names firsts from before a lag): what a member of named executions lost
      // is, for each, what was appended after its lag began (its events are appended in order, each once).
      lost = new Map();
      dropped = 0;
      for (const [id, appended] of client.lagFrom) {
        // What it has of it: what was appended before its lag (its view held it), or what its
        // history or its cursor gave it of an execution nothing was appended of yet, or what a
        // notice of its history already announced as lost.
        const from = Math.max(appended, client.gotOf(id), client.announcedOf(id));
        const last = this.lastAppended.get(id) ?? from;
        if (last <= from) continue;
        lost.set(id, { first: from + 1, last });
        dropped += last - from;
      }
      client.lagFrom = null;
    }
    const lastSequence: Record<string, number> = {};
    for (const [id, { first, last }] of lost) {
      // What is at or below its cursor it has, and was not lost (see LiveClient.skip).
      const after = client.skip?.get(id);
      if (after !== undefined) {
        const had = Math.max(0, Math.min(after, last) - first + 1);
        dropped -= had;
        if (last <= after) continue;
        client.skip!.delete(id);
        if (client.skip!.size === 0) client.skip = null;
      }
      lastSequence[id] = client.gotOf(id);
    }
    client.view = null;
    client.lag = null;
    this.unkeep(client);
    group.lagging.delete(client);
    client.cursor = group.log.end;
    group.behind.add(client);
    return { dropped, lastSequence };
  }

  /**
   * Publishes a group's waiting frames until `now()` passes `until`, looking at the members'
   * buffers every CHECK_BYTES: Bun writes a publish into each member's socket at once, so a member
   * that stopped reading would otherwise take in everything published in one go (tens of MB
   * during a flood). A member whose buffer shows it fell behind leaves the topic for its own
   * sends from the log (`left` is told) and publishing goes on. True when none is left to publish.
   */
  publishPending(group: LiveGroup, until: number, now: () => number, left: (client: LiveClient) => void, seen: number): boolean {
    const { log } = group;
    let published = false;
    if (group.pending > TOPIC_BURST) {
      for (const client of [...group.fast]) {
        this.leave(client, false);
        left(client);
      }
      return true;
    }
    let unchecked = CHECK_BYTES;
    while (group.published < log.end && group.fast.size > 0) {
      if (unchecked >= CHECK_BYTES) {
        unchecked = 0;
        this.takeOffFull(group, left);
        continue;
      }
      const position = group.published++;
      const id = executionAt(log, position);
      if (!group.follows(id)) continue;
      const frame = frameAt(log, position);
      this.topics!.publish(group.topic, frame);
      published = true;
      unchecked += frame.length;
      const sequence = sequenceAt(log, position);
      if (sequence < 0) group.lastPublished.delete(id);
      else group.lastPublished.set(id, sequence);
      // A publish costs a write per member: a large group looks at the clock after each.
      if (group.fast.size >= 16 && now() > until) break;
    }
    // A busy topic is no quiet connection: its members get no heartbeat (see LiveChannel's heartbeat).
    if (published) group.seen = seen;
    // No look after the last frame: what went in since the last look is less than CHECK_BYTES, and
    // the next publish looks first (one pass over the members per trickled event, not two).
    return group.pending === 0;
  }

  /** Members whose socket holds more than FAST_BUFFER_BYTES leave the topic, blocked until it drains. */
  private takeOffFull(group: LiveGroup, left: (client: LiveClient) => void): void {
    for (const client of group.fast) {
      if (client.socket.bufferedAmount() <= FAST_BUFFER_BYTES) continue;
      this.leave(client, true);
      left(client);
    }
  }

  /**
   * A caught-up log member joins its group's topic. A lone watcher is served as well by its own
   * corked sends, so topics start from two members. Never while the topic has frames waiting to
   * be published: the client has those already, and would get them twice.
   */
  join(client: LiveClient): void {
    const group = client.group;
    if (client.fast || !this.topics || !client.socket.subscribe || client.cursor !== group.log.end || group.pending > 0) return;
    // A topic cannot leave out what one member already has.
    if (client.skip !== null || client.overlap !== null) return;
    if (group.behind.size + group.fast.size < 2) return;
    try {
      client.socket.subscribe(group.topic);
    } catch {
      // A socket closing under us stays on its own sends; its close handler forgets it.
      return;
    }
    if (group.fast.size === 0) group.published = group.log.end;
    group.behind.delete(client);
    group.fast.add(client);
    client.fast = true;
    client.topicFrom = new Map(group.lastPublished);
  }

  /** Off the topic, back to its own sends from where the topic had brought it: its buffer filled, or it is going away. */
  leave(client: LiveClient, blocked: boolean): void {
    const group = client.group;
    client.fast = false;
    client.blocked = blocked;
    group.fast.delete(client);
    // What the topic published while it was a member reached it.
    for (const [id, sequence] of group.lastPublished) if (client.topicFrom!.get(id) !== sequence) client.handed(id, sequence);
    for (const id of client.topicFrom!.keys()) if (!group.lastPublished.has(id)) client.handed(id, -1);
    client.topicFrom = null;
    client.cursor = group.published;
    group.behind.add(client);
    try {
      client.socket.unsubscribe!(group.topic);
    } catch {
      // A closed socket has left every topic already.
    }
    if (group.fast.size === 0) group.lastPublished.clear();
  }

  /** A client is gone: out of its group's sets; an empty group stops listening and is dropped. */
  release(client: LiveClient): void {
    const group = client.group;
    if (client.fast) this.leave(client, false);
    group.behind.delete(client);
    if (client.lag !== null) group.log.releaseLag(client.lag);
    client.lagFrom = null;
    client.lostBefore = null;
    group.lagging.delete(client);
    this.unkeep(client);
    client.view = null;
    client.lag = null;
    if (--group.members === 0) {
      this.groups.delete(group.key);
      if (group.ids === null) this.followingAll--;
      else {
        for (const id of group.ids) {
          const left = this.followers.get(id)! - 1;
          if (left > 0) this.followers.set(id, left);
          else {
            this.followers.delete(id);
            this.lastAppended.delete(id);
          }
        }
      }
    }
    this.trim();
  }
}

/**
 * True when a member with `queued` bytes waiting for it (the log from its place to the end: its
 * own executions' frames or not) falls past `bound` by a frame of `incoming` bytes. One with
 * nothing waiting never does, whatever the frame's size (at most frame_bytes): a bound under one
 * frame made every frame larger than it a loss even to a client that had read everything
 * (live-channel tester). So the log holds at most the bound, or one frame, for a member.
 */
function beyond(queued: number, incoming: number, bound: number): boolean {
  return queued > 0 && queued + incoming > bound;
}

/**
 * The bytes of the log the members' views hold together: their stretches (each ending at
 * `keptUntil`, `keptBytes` long, in bytes appended in all) merged where they overlap. O(n log n)
 * in the members that keep one, counted when one begins or ends keeping, never per event.
 */
function keptTogether(keeping: Iterable<LiveClient>): number {
  const spans = [...keeping].map((client) => [client.keptUntil - client.keptBytes, client.keptUntil] as const).sort((a, b) => a[0] - b[0]);
  let total = 0;
  let from = 0;
  let to = Number.NEGATIVE_INFINITY;
  for (const [start, end] of spans) {
    if (start > to) {
      if (to > from) total += to - from;
      from = start;
      to = end;
    } else if (end > to) to = end;
  }
  if (to > from) total += to - from;
  return total;
}

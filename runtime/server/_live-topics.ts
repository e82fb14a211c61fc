import type { ExecutionEvent } from "../execution/protocol.ts";
import type { LiveClient } from "./_live-client.ts";
import { LiveGroup } from "./_live-client.ts";
import type { Subscription } from "../store/store.ts";
import type { LiveSocket, LiveTopics } from "./live-socket.ts";
import type { LiveTarget } from "./live-target.ts";

/** How a topic group reaches the store: one subscription for the group, one for a client leaving it. */
export interface TopicSubscriptions {
  /** The group's live-only subscription, feeding its topic; made when its first member joins. */
  group(group: LiveGroup): Subscription;
  /** A client's own live-only subscription again, once it left the topic. */
  client(client: LiveClient): Subscription;
}

// A fast (topic) client whose socket buffers more than this has fallen behind: it leaves the topic
// and goes back to its own bounded queue, where lag is counted exactly.
const FAST_BUFFER_BYTES = 256 * 1024;
// Bytes published to a topic between two looks at its members' buffers: a member that stopped
// reading holds at most FAST_BUFFER_BYTES + CHECK_BYTES (+ one frame) in its socket before it is
// seen and leaves, whatever the flood (docs/protocol.md, "Backpressure").
const CHECK_BYTES = 64 * 1024;

/**
 * The live channel's use of a runtime's native fan-out (Bun topics): connections that follow the
 * same target form a group; its caught-up ("fast") members are subscribed to one topic, and each
 * event is published once for all of them instead of sent to each. A fast member drops its own
 * store subscription: the group holds one for all of its fast members, so a hundred watchers of
 * one execution cost its producer one listener call per event, not a hundred.
 */
export class LiveTopicGroups {
  private readonly groups = new Map<string, LiveGroup>();
  private nextTopic = 1;
  private subscriptions: TopicSubscriptions | null = null;

  constructor(private readonly topics: LiveTopics) {}

  /** How groups and leaving clients subscribe to the store (the channel's listeners). */
  useSubscriptions(subscriptions: TopicSubscriptions): void {
    this.subscriptions = subscriptions;
  }

  /** The group of a new connection, or null when its socket cannot join topics. */
  groupFor(socket: LiveSocket, target: LiveTarget): LiveGroup | null {
    if (!socket.subscribe || !socket.unsubscribe) return null;
    // `after` only shapes the replay: once caught up, the same target means the same live events.
    const key = target.executions === "all" ? "*" : [...target.executions].sort().join(",");
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = new LiveGroup(key, target, `docket.live.${this.nextTopic++}`)));
    group.members++;
    return group;
  }

  /**
   * Queues an event for a group's topic, for the channel's writer to publish. True when the group
   * has just got something to publish. O(1): no socket is asked anything on the append path.
   */
  deliverToGroup(group: LiveGroup, event: ExecutionEvent, frame: string): boolean {
    if (group.last === event) return false;
    group.last = event;
    group.outbox.push(frame);
    group.outboxEvents.push(event);
    group.pendingBytes += frame.length;
    return group.pending === 1;
  }

  /**
   * The topic fell further behind than one client may (its unpublished frames would pass
   * `limitBytes`): every member leaves it lagging, each resuming after the last event it got, and
   * the unpublished frames are dropped for them, as for any client past its bound.
   */
  overflow(group: LiveGroup): void {
    const dropped = group.pending + 1;
    // The executions the notice names: those the topic published, and those of the dropped frames.
    const named = new Set(group.lastPublished.keys());
    for (let i = group.published; i < group.outbox.length; i++) named.add(group.outboxEvents[i]!.execution_id);
    group.published = group.outbox.length;
    group.compact();
    for (const client of [...group.fast]) {
      this.leave(client, false);
      client.dropped += dropped;
      // Each resumes after what it got itself: a member that joined late missed what the topic
      // published before it (dropped for it then, and announced).
      client.lagFrom = new Map([...named].map((id) => [id, client.got.get(id) ?? 0]));
    }
  }

  /**
   * Publishes a group's waiting frames until `until` (performance.now()), looking at the members'
   * buffers every CHECK_BYTES: Bun writes a publish into each member's socket at once, so a member
   * that stopped reading would otherwise take in everything published in one go (tens of MB on the
   * append path during a flood). Given `left` (the writer), a member whose buffer shows it fell
   * behind leaves the topic for its own bounded queue and publishing goes on. Without it (the append
   * path) publishing stops and the group is `held` until the writer took that member off: members
   * move between subscriptions only on the writer's turns. True when none is left to publish.
   */
  publishPending(group: LiveGroup, until: number, left: ((client: LiveClient) => void) | null): boolean {
    if (group.held && left === null) return false;
    let unchecked = CHECK_BYTES;
    while (group.published < group.outbox.length) {
      if (unchecked >= CHECK_BYTES) {
        unchecked = 0;
        if (this.takeOffFull(group, left)) return false;
        // The last member may have left: then the group forgot its outbox (see leave).
        continue;
      }
      const frame = group.outbox[group.published]!;
      const event = group.outboxEvents[group.published++]!;
      this.topics.publish(group.topic, frame);
      unchecked += frame.length;
      group.pendingBytes -= frame.length;
      group.lastPublished.set(event.execution_id, event.sequence);
      if ((group.published & 63) === 0 && performance.now() > until) break;
    }
    // No look after the last frame: what went in since the last look is less than CHECK_BYTES, and
    // the next publish looks first (one pass over the members per trickled event, not two).
    group.compact();
    return group.pending === 0;
  }

  /**
   * Members whose socket holds more than FAST_BUFFER_BYTES leave the topic (`left` given), or, on
   * the append path, hold the group's publishing until the writer can take them off: true then.
   */
  private takeOffFull(group: LiveGroup, left: ((client: LiveClient) => void) | null): boolean {
    for (const client of group.fast) {
      if (client.socket.bufferedAmount() <= FAST_BUFFER_BYTES) continue;
      if (left === null) return (group.held = true);
      this.leave(client, true);
      left(client);
    }
    group.held = false;
    return false;
  }

  /**
   * A caught-up client joins its group's topic. A lone watcher is served as well by its own
   * corked sends, so topics start from two members. Never while the topic has frames waiting to
   * be published: the client already has those events in its own queue, and would get them twice.
   */
  join(client: LiveClient): void {
    const group = client.group;
    // A member already (a drain reaches fast members too): its place on the topic stands.
    if (client.fast || !group || group.members < 2 || group.pending > 0 || !this.subscriptions) return;
    try {
      client.socket.subscribe!(group.topic);
    } catch {
      // A socket closing under us stays on its own sends; its close handler forgets it.
      return;
    }
    // Caught up, so everything stored so far is written: from here on the group's subscription
    // (made now if this is its first fast member) brings what comes next, and its own goes.
    group.subscription ??= this.subscriptions.group(group);
    client.subscription?.unsubscribe();
    client.subscription = null;
    client.fast = true;
    client.topicFrom = new Map(group.lastPublished);
    group.fast.add(client);
  }

  /**
   * Back to the client's own queue: its buffer filled (blocked until drain) or it is going away.
   * What the topic has not published yet was meant for it too: it moves to the client's queue first.
   */
  leave(client: LiveClient, blocked: boolean): void {
    client.fast = false;
    client.blocked = blocked;
    const group = client.group!;
    group.fast.delete(client);
    // What the topic published while it was a member reached it; what it had not published yet
    // is queued for it now.
    for (const [id, sequence] of group.lastPublished) if (client.topicFrom?.get(id) !== sequence) client.got.set(id, sequence);
    client.topicFrom = null;
    for (let i = group.published; i < group.outbox.length; i++) {
      client.pushLive(group.outbox[i]!);
      client.got.set(group.outboxEvents[i]!.execution_id, group.outboxEvents[i]!.sequence);
    }
    try {
      client.socket.unsubscribe!(group.topic);
    } catch {
      // A closed socket has left every topic already.
    }
    // Nobody left on the topic: the group stops listening and forgets what it had not published.
    if (group.fast.size === 0) {
      group.subscription?.unsubscribe();
      group.subscription = null;
      group.published = group.outbox.length;
      group.compact();
      group.last = null;
      group.lastPublished.clear();
    }
    // Back on its own subscription, live from this instant: everything before it is written or queued.
    if (!client.closed) client.subscription = this.subscriptions!.client(client);
  }

  /** A client is gone: out of its topic and group; an empty group is dropped. */
  release(client: LiveClient): void {
    if (client.fast) this.leave(client, false);
    if (client.group && --client.group.members === 0) this.groups.delete(client.group.key);
  }
}

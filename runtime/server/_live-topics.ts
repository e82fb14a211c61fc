import type { ExecutionEvent } from "../execution/protocol.ts";
import type { LiveClient } from "./_live-client.ts";
import { LiveGroup } from "./_live-client.ts";
import type { LiveSocket, LiveTopics } from "./live-socket.ts";
import type { LiveTarget } from "./live-target.ts";

// A fast (topic) client whose socket buffers more than this has fallen behind: it leaves the topic
// and goes back to its own bounded queue, where lag is counted exactly.
const FAST_BUFFER_BYTES = 256 * 1024;

/**
 * The live channel's use of a runtime's native fan-out (Bun topics): connections that follow the
 * same target form a group; its caught-up ("fast") members are subscribed to one topic, and each
 * event is published once for all of them instead of sent to each.
 */
export class LiveTopicGroups {
  private readonly groups = new Map<string, LiveGroup>();
  private nextTopic = 1;

  constructor(private readonly topics: LiveTopics) {}

  /** The group of a new connection, or null when its socket cannot join topics. */
  groupFor(socket: LiveSocket, target: LiveTarget): LiveGroup | null {
    if (!socket.subscribe || !socket.unsubscribe) return null;
    // `after` only shapes the replay: once caught up, the same target means the same live events.
    const key = target.executions === "all" ? "*" : [...target.executions].sort().join(",");
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = new LiveGroup(key, `docket.live.${this.nextTopic++}`)));
    group.members++;
    return group;
  }

  /**
   * Delivers an event to a fast client: published once per group (by the first member it reaches),
   * then the client leaves the topic if its buffer shows it fell behind.
   */
  deliverFast(client: LiveClient, event: ExecutionEvent, frame: string): void {
    const group = client.group!;
    if (group.last !== event) {
      group.last = event;
      this.topics.publish(group.topic, frame);
    }
    if (client.socket.bufferedAmount() > FAST_BUFFER_BYTES) this.leave(client, true);
  }

  /**
   * A caught-up client joins its group's topic. A lone watcher is served as well by its own
   * corked sends, so topics start from two members.
   */
  join(client: LiveClient): void {
    if (!client.group || client.group.members < 2) return;
    try {
      client.socket.subscribe!(client.group.topic);
      client.fast = true;
    } catch {
      // A socket closing under us stays on its own sends; its close handler forgets it.
    }
  }

  /** Back to the client's own queue: its buffer filled (blocked until drain) or it is going away. */
  leave(client: LiveClient, blocked: boolean): void {
    client.fast = false;
    client.blocked = blocked;
    try {
      client.socket.unsubscribe!(client.group!.topic);
    } catch {
      // A closed socket has left every topic already.
    }
  }

  /** A client is gone: out of its topic and group; an empty group is dropped. */
  release(client: LiveClient): void {
    if (client.fast) this.leave(client, false);
    if (client.group && --client.group.members === 0) this.groups.delete(client.group.key);
  }
}

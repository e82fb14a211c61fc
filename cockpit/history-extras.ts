import { EVENT_TYPES, type ExecutionEvent } from "../runtime/execution/protocol.ts";
import type { ExecutionStore } from "../runtime/store/store.ts";

/** Characters of each named stream an execution page shows (the browser keeps the same bound). */
export const STREAM_TAIL_CHARS = 64 * 1024;

/** Unknown-type events an execution page lists at most. */
const OTHER_EVENTS_SHOWN = 200;

const KNOWN = new Set<string>(EVENT_TYPES);

/** What an execution's history holds that its snapshot does not: stream tails and events of unknown types. */
export interface HistoryExtras {
  streams: Map<string, string>;
  other: ExecutionEvent[];
}

/**
 * Reads the retained history once, a page at a time, for the parts the snapshot leaves out
 * (the snapshot of docs/protocol.md keeps no streams). Bounded: each stream keeps its last {@link STREAM_TAIL_CHARS}.
 */
export function historyExtras(store: ExecutionStore, id: string, through: number): HistoryExtras {
  const streams = new Map<string, string>();
  const other: ExecutionEvent[] = [];
  let after = 0;
  while (after < through) {
    const page = store.events(id, after, 1000);
    if (!page || page.events.length === 0) break;
    for (const event of page.events) {
      if (event.sequence > through) break;
      if (event.type === "execution.stream") {
        const data = event.data as { name: string; chunk: string };
        const text = (streams.get(data.name) ?? "") + data.chunk;
        streams.set(data.name, text.length > STREAM_TAIL_CHARS ? text.slice(-STREAM_TAIL_CHARS) : text);
      } else if (!KNOWN.has(event.type)) {
        other.push(event);
        if (other.length > OTHER_EVENTS_SHOWN) other.shift();
      }
    }
    after = page.events[page.events.length - 1]!.sequence;
  }
  return { streams, other };
}

import { EVENT_TYPES, type ExecutionEvent } from "../runtime/execution/protocol.ts";
import type { ExecutionStore } from "../runtime/store/store.ts";

/** Characters of each named stream an execution page shows (the browser keeps the same bound). */
export const STREAM_TAIL_CHARS = 64 * 1024;

/**
 * Named streams an execution page shows at most: those written to last, in the order they began
 * (the browser keeps the same bound). Each costs a block of the page; a handler naming a stream
 * per file of 16,000 made a 17 MB page that took its browser 6 s to open.
 */
export const STREAMS_SHOWN = 100;

/** Unknown-type events an execution page lists at most. */
const OTHER_EVENTS_SHOWN = 200;

const KNOWN = new Set<string>(EVENT_TYPES);

/** What an execution's history holds that its snapshot does not: stream tails and events of unknown types. */
export interface HistoryExtras {
  streams: Map<string, string>;
  /** The sequence of each shown stream's last chunk: the page keeps the latest written when live chunks come. */
  streamsWritten: Map<string, number>;
  /** Streams not shown (past STREAMS_SHOWN): the ones written to least lately. */
  streamsDropped: number;
  other: ExecutionEvent[];
}

/**
 * Reads the retained history once, a page at a time, for the parts the snapshot leaves out
 * (the snapshot of docs/protocol.md keeps no streams). Bounded: each stream keeps its last {@link STREAM_TAIL_CHARS}.
 */
export function historyExtras(store: ExecutionStore, id: string, through: number): HistoryExtras {
  const streams = new Map<string, string>();
  // When each stream was last written to (its last sequence), to keep the STREAMS_SHOWN latest.
  const written = new Map<string, number>();
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
        written.set(data.name, event.sequence);
      } else if (!KNOWN.has(event.type)) {
        other.push(event);
        if (other.length > OTHER_EVENTS_SHOWN) other.shift();
      }
    }
    after = page.events[page.events.length - 1]!.sequence;
  }
  if (streams.size <= STREAMS_SHOWN) return { streams, streamsWritten: written, streamsDropped: 0, other };
  const latest = new Set([...written].sort((a, b) => b[1] - a[1]).slice(0, STREAMS_SHOWN).map(([name]) => name));
  const shown = new Map([...streams].filter(([name]) => latest.has(name)));
  return { streams: shown, streamsWritten: written, streamsDropped: streams.size - shown.size, other };
}

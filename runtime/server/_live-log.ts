import type { ExecutionEvent } from "../execution/protocol.ts";

// Entries per chunk. Chunks (but the first) start at multiples of CHUNK, so a position finds its
// chunk by a shift; a member that falls too far behind keeps the chunks it still needs, not copies.
const CHUNK_BITS = 10;
const CHUNK = 1 << CHUNK_BITS;
// Lag epochs held at once before the oldest two are merged: a member that stopped reading holds
// its epoch for as long as its connection lasts, and each lag of another member begins one more.
const MAX_EPOCHS = 32;

/**
 * The sequence the log records for an event: negative for an execution's last event — its
 * completion, unless its outcome is unknown (then a reconciliation may still follow), or that
 * reconciliation.
 */
export function signedSequence(event: ExecutionEvent): number {
  if (event.type === "execution.reconciled") return -event.sequence;
  if (event.type !== "execution.completed") return event.sequence;
  const data = event.data as { failure?: { outcome_certainty?: string } };
  return data.failure?.outcome_certainty === "unknown" ? event.sequence : -event.sequence;
}

/** Makes an event's frame: called once per entry, by the first member it is written to. */
export type FrameMaker = (event: ExecutionEvent) => string;

/** A run of consecutive entries of the channel's log: entry i is at position `start + i`. */
export class LogChunk {
  /**
   * Each entry's frame, made when it is first written to a member (see frame): storing an event
   * costs no serialization, which is done on the writer's turns, within its share of the main
   * thread (docs/protocol.md, "Backpressure"), and never for an event nobody is sent.
   */
  readonly frames: Array<string | undefined> = new Array(CHUNK);
  /** The events whose frames are not made yet; let go with their frames. */
  readonly events: Array<ExecutionEvent | undefined> = new Array(CHUNK);
  readonly ids: string[] = new Array(CHUNK);
  /** Each entry's sequence; negative for an execution's last event (`execution.completed`). */
  readonly sequences = new Float64Array(CHUNK);
  /** Bytes of the log before each entry, as subscriber_queue_bytes counts them (see LiveLog.append). */
  readonly before = new Float64Array(CHUNK);
  /** Entries held: `[0, size)`. */
  size = 0;
  /** Frames before this index were let go (nobody needs them any more). */
  cleared = 0;
  /** A member's view holds it: its frames stay until the chunk itself goes. */
  viewed = false;
  /**
   * The one execution every entry so far is of, or null once two are: a member following other
   * executions passes a chunk of a flood in one step (see LiveGroup.follows).
   */
  single: string | null | undefined = undefined;
  constructor(
    readonly start: number,
    private readonly make: FrameMaker,
  ) {}

  /** Entry i's frame, made now if no member was written it yet. */
  frame(i: number): string {
    let frame = this.frames[i];
    if (frame === undefined) {
      frame = this.frames[i] = this.make(this.events[i]!);
      this.events[i] = undefined;
    }
    return frame;
  }
}

/** Where a span of positions is read from: the log itself, or what a member that fell behind kept of it. */
export interface LogEntries {
  /** The chunk holding `position`: a writer reads a run of entries from it without a look-up each. */
  chunkAt(position: number): LogChunk;
}

/** The frame at `position`. */
export function frameAt(entries: LogEntries, position: number): string {
  const chunk = entries.chunkAt(position);
  return chunk.frame(position - chunk.start);
}

/** The execution of the event at `position`. */
export function executionAt(entries: LogEntries, position: number): string {
  const chunk = entries.chunkAt(position);
  return chunk.ids[position - chunk.start]!;
}

/** The sequence at `position`, negative when it is its execution's last event. */
export function sequenceAt(entries: LogEntries, position: number): number {
  const chunk = entries.chunkAt(position);
  return chunk.sequences[position - chunk.start]!;
}

function chunkOf(chunks: readonly LogChunk[], position: number): LogChunk {
  return chunks[(position >> CHUNK_BITS) - (chunks[0]!.start >> CHUNK_BITS)]!;
}

/** Entries `[from, end)` a member kept when it fell too far behind for the log to hold them for it. */
export class LogView implements LogEntries {
  constructor(private readonly chunks: readonly LogChunk[], readonly end: number) {}
  chunkAt(position: number): LogChunk {
    return chunkOf(this.chunks, position);
  }
}

/**
 * Where a member's lag began (see LiveLog.startLag): the first sequence of each execution whose
 * events were appended from `at` on, until the next epoch began.
 */
export interface LagEpoch {
  readonly at: number;
  readonly firsts: Map<string, number>;
  /** The last sequence of each execution appended in the epoch. */
  readonly lasts: Map<string, number>;
  holders: number;
  /** Merged into an older epoch (see startLag): its holders read that one. */
  into: LagEpoch | null;
}

/** The epoch that stands for `epoch` now. */
function resolved(epoch: LagEpoch): LagEpoch {
  while (epoch.into !== null) epoch = epoch.into;
  return epoch;
}

/**
 * The frames of the live channel, in the order the store handed them out, each once for every
 * connection (docs/protocol.md, "Backpressure"). Positions count from 0 for the channel's life;
 * entries `[start, end)` are held. A connection is a position in it, reading the entries of what
 * it follows: appending costs one push however many connections there are and whatever they
 * follow, and a connection behind is written from the log on the channel's writer turns, never
 * on the append path.
 */
export class LiveLog implements LogEntries {
  private chunks: LogChunk[] = [];
  /** @param make makes an entry's frame, when a member is first written it (default: the event's JSON) */
  constructor(private readonly make: FrameMaker = (event) => JSON.stringify(event)) {}
  /** The position the next append takes. */
  end = 0;
  /** Bytes appended in all (bytes before `end`). */
  bytes = 0;
  /**
   * Lag epochs begun and not yet let go, oldest first: while any is held, each append records
   * the first sequence of its execution in the newest, so a lagging member's notice can name
   * every execution it lost events of (see endLag), at O(1) per append however many lag.
   */
  private readonly epochs: LagEpoch[] = [];

  /** The first position still held. */
  get start(): number {
    return this.chunks.length === 0 ? this.end : this.chunks[0]!.start + this.chunks[0]!.cleared;
  }

  /**
   * Appends an event: its frame when made already (a store that serialized it), else it is made
   * when first written; `length` is what it counts for in the members' backlogs.
   */
  append(event: ExecutionEvent, frame: string | undefined, length: number): void {
    const position = this.end;
    let chunk = this.chunks.at(-1);
    if (chunk === undefined || (position & (CHUNK - 1)) === 0) this.chunks.push((chunk = new LogChunk(position, this.make)));
    const i = chunk.size++;
    if (frame === undefined) chunk.events[i] = event;
    else chunk.frames[i] = frame;
    chunk.ids[i] = event.execution_id;
    if (chunk.single === undefined) chunk.single = event.execution_id;
    else if (chunk.single !== event.execution_id) chunk.single = null;
    chunk.sequences[i] = signedSequence(event);
    chunk.before[i] = this.bytes;
    this.bytes += length;
    this.end = position + 1;
    const epoch = this.epochs.at(-1);
    if (epoch !== undefined) {
      if (!epoch.firsts.has(event.execution_id)) epoch.firsts.set(event.execution_id, event.sequence);
      epoch.lasts.set(event.execution_id, event.sequence);
    }
  }

  chunkAt(position: number): LogChunk {
    return chunkOf(this.chunks, position);
  }

  /** Bytes of the frames from `position` (held, or `end`) to the end, as counted on append: a member's backlog. */
  bytesFrom(position: number): number {
    if (position >= this.end) return 0;
    const chunk = chunkOf(this.chunks, position);
    return this.bytes - chunk.before[position - chunk.start]!;
  }

  /** What a member at `from` still needs, up to the end, kept apart from the log. */
  view(from: number): LogView {
    if (from >= this.end || this.chunks.length === 0) return new LogView([], from);
    const first = (from >> CHUNK_BITS) - (this.chunks[0]!.start >> CHUNK_BITS);
    const chunks = this.chunks.slice(first);
    for (const chunk of chunks) chunk.viewed = true;
    return new LogView(chunks, this.end);
  }

  /** Lets go of every entry before `position` (no member needs them); views keep what they hold. */
  trim(position: number): void {
    if (this.chunks.length === 0) return;
    // Everything let go: the last chunk is kept all the same (emptied), for the appends to come —
    // a caught-up member trims after every write, and a chunk is made for CHUNK entries. Not one
    // a view holds (the view keeps it).
    if (position >= this.end && this.chunks.at(-1)!.viewed) {
      this.chunks = [];
      return;
    }
    let drop = 0;
    while (drop < this.chunks.length - 1 && this.chunks[drop + 1]!.start <= position) drop++;
    if (drop > 0) this.chunks = this.chunks.slice(drop);
    const chunk = this.chunks[0]!;
    // In the chunk a member still reads, frames behind every member are let go one by one: a
    // chunk holds up to CHUNK frames of up to frame_bytes each. Not in one a view holds.
    if (chunk.viewed) return;
    const behind = Math.min(position, this.end) - chunk.start;
    for (let i = chunk.cleared; i < behind; i++) chunk.frames[i] = chunk.events[i] = undefined;
    chunk.cleared = Math.max(chunk.cleared, behind);
  }

  /**
   * A member lags from the end of the log on: the epoch it holds until its notice (endLag). Past
   * MAX_EPOCHS held, the oldest two become one: the holders of the younger may then name an
   * execution they lost nothing of (with what they got of it, so nothing is reloaded twice), but
   * what is held stays bounded whatever a stalled connection does.
   */
  startLag(): LagEpoch {
    let epoch = this.epochs.at(-1);
    if (epoch === undefined || epoch.at !== this.end) this.epochs.push((epoch = { at: this.end, firsts: new Map(), lasts: new Map(), holders: 0, into: null }));
    epoch.holders++;
    if (this.epochs.length > MAX_EPOCHS) {
      const [older, younger] = this.epochs as [LagEpoch, LagEpoch];
      for (const [id, sequence] of younger.firsts) if (!older.firsts.has(id)) older.firsts.set(id, sequence);
      for (const [id, sequence] of younger.lasts) older.lasts.set(id, sequence);
      older.holders += younger.holders;
      younger.into = older;
      this.epochs.splice(1, 1);
    }
    return epoch;
  }

  /**
   * A lagging member resumes at the end: how many events it lost (everything appended since its
   * epoch began) and, for each execution among them, the first and the last sequence it lost
   * (an execution's events are appended in order, each once: it lost every one between).
   */
  endLag(held: LagEpoch): { dropped: number; lost: Map<string, { first: number; last: number }> } {
    const lost = new Map<string, { first: number; last: number }>();
    for (let i = this.epochs.indexOf(resolved(held)); i >= 0 && i < this.epochs.length; i++) {
      const epoch = this.epochs[i]!;
      for (const [id, first] of epoch.firsts) {
        const span = lost.get(id);
        if (span === undefined) lost.set(id, { first, last: epoch.lasts.get(id)! });
        else span.last = epoch.lasts.get(id)!;
      }
    }
    this.releaseLag(held);
    // Counted from where this member's lag began (a merged epoch may begin earlier).
    return { dropped: this.end - held.at, lost };
  }

  /** A lagging member went away: its epoch is let go without a notice. */
  releaseLag(held: LagEpoch): void {
    resolved(held).holders--;
    while (this.epochs.length > 0 && this.epochs[0]!.holders === 0) this.epochs.shift();
  }

  /** Lag epochs held now (for tests of the bound). */
  get epochsHeld(): number {
    return this.epochs.length;
  }
}

import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { cancelledRequest } from "./pending-requests.ts";

const NEWLINE = 0x0a;
const BACKSLASH = 0x5c;
const SPACE = 0x20;
/** What a cancel line holds when its method is written plainly. */
const CANCELLED = Buffer.from("notifications/cancelled");

/** A cancel among the held lines: where its line is (the newline excluded), and the request it cancels. */
interface HeldCancel {
  start: number;
  end: number;
  id: RequestId;
}

/**
 * Lines read from stdin and held back until a later turn (see JsonLinesTransport), with the
 * cancels among them found as they come. Each line is looked at once, when it arrives, not at
 * every turn: a backlog of a MiB is read out 64 lines a turn, and looking again at all of it
 * each turn cost as much as the reading, over and over.
 */
export class HeldLines {
  private buffer: Buffer;
  /** The buffer is a copy of docket's own (a concatenation), not a chunk the stream handed over: a line may be blanked in it. */
  private owned: boolean;
  /** Where the lines not looked at yet begin. */
  private scanned = 0;
  /** The first piece ends a line begun before these bytes (or one being skipped): it is no line of its own. */
  private continues: boolean;
  private cancels: HeldCancel[] = [];

  constructor(
    bytes: Buffer,
    continues: boolean,
    private readonly maxLineBytes: number,
  ) {
    this.buffer = bytes;
    this.owned = false;
    this.continues = continues;
    this.scan();
  }

  /** The bytes held, from the start of the first line not read yet. */
  get bytes(): Buffer {
    return this.buffer;
  }

  /** Whether a whole line is held: what is left otherwise is the start of one. */
  get holdsLine(): boolean {
    return this.scanned > 0;
  }

  /** Bytes stdin brought meanwhile, held behind the rest. */
  append(bytes: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, bytes]);
    this.owned = true;
    this.scan();
  }

  /** stdin ended: a last line sent without a newline is a line all the same. */
  endLastLine(): void {
    const open = this.buffer.length === 0 ? this.continues : this.buffer[this.buffer.length - 1] !== NEWLINE;
    if (open) this.append(Buffer.from([NEWLINE]));
  }

  /** The first `count` bytes were read, up to the end of a line. */
  dropFront(count: number): void {
    if (count === 0) return;
    this.buffer = this.buffer.subarray(count);
    this.scanned -= count;
    this.continues = false;
    this.cancels = this.cancels.filter((cancel) => cancel.start >= count).map((cancel) => ({ ...cancel, start: cancel.start - count, end: cancel.end - count }));
  }

  /**
   * Takes out, in order, each held cancel of a request `inFlight` names, and hands its line to
   * `read`: a blank line stays in its place, passed over when it comes.
   */
  takeCancels(inFlight: (id: RequestId) => boolean, read: (line: string) => void): void {
    if (this.cancels.length === 0) return;
    const taken = this.cancels.filter((cancel) => inFlight(cancel.id));
    if (taken.length === 0) return;
    this.cancels = this.cancels.filter((cancel) => !inFlight(cancel.id));
    if (!this.owned) {
      this.buffer = Buffer.from(this.buffer);
      this.owned = true;
    }
    for (const cancel of taken) {
      const line = this.buffer.toString("utf8", cancel.start, cancel.end);
      this.buffer.fill(SPACE, cancel.start, cancel.end);
      read(line);
    }
  }

  /** Looks once at each whole line not looked at yet. */
  private scan(): void {
    for (let end = this.buffer.indexOf(NEWLINE, this.scanned); end !== -1; end = this.buffer.indexOf(NEWLINE, this.scanned)) {
      const start = this.scanned;
      this.scanned = end + 1;
      if (start === 0 && this.continues) continue;
      const id = this.cancelIn(this.buffer.subarray(start, end));
      if (id !== undefined) this.cancels.push({ start, end, id });
    }
  }

  /**
   * The request a line cancels, if it is a cancel. Only a line that holds the method as written
   * plainly, or a backslash, is parsed: JSON may spell the method with escapes (`\/`, as PHP's
   * json_encode writes every slash, or `\u0063`), and every one of them has a backslash.
   */
  private cancelIn(line: Buffer): RequestId | undefined {
    if (line.length > this.maxLineBytes || (line.indexOf(CANCELLED) === -1 && line.indexOf(BACKSLASH) === -1)) return undefined;
    try {
      return cancelledRequest(JSON.parse(line.toString("utf8")) as JSONRPCMessage);
    } catch {
      return undefined;
    }
  }
}

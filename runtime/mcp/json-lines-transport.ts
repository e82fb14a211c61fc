import type { Readable, Writable } from "node:stream";
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { checkMessage } from "./_message-check.ts";
import { isBlankJson, jsonErrorPosition, jsonParseReason } from "../execution/json-position.ts";
import { HeldLines } from "./_held-lines.ts";
import { UnansweredRequests } from "./_unanswered-requests.ts";

/** The longest line read as one message (the SDK's stdio bound, 10 MiB); a longer one is answered and skipped. */
export const MAX_LINE_BYTES = STDIO_DEFAULT_MAX_BUFFER_SIZE;

const NEWLINE = 0x0a;

/** Lines read in one turn at most: their answers are the most that pile up before stdout is seen to be full. */
const LINES_PER_TURN = 64;

/**
 * What stdin may hold back, read and not yet answered, before it is paused. Below it stdin is
 * read on while answers wait (their turn, or stdout's room): a socket stdin (what Node gives a
 * child) paused when the agent ended it was never heard to end under Bun 1.4, and the process
 * spun a core instead of exiting.
 */
export const MAX_BACKLOG_BYTES = 1024 * 1024;

/**
 * Requests read and not yet answered past which no further line is read (but a cancel of one of
 * them, which ends it) until answers go out. Below it, stdin was read on however slow the work:
 * two thousand calls of ten minutes each, 500 KB apiece, were read ahead into half a gigabyte
 * (MCP checking tester, session 50). Notifications do not count; a cancelled request is done.
 */
export const MAX_UNANSWERED_REQUESTS = 256;

/** The bytes of those requests' lines, together, past which no further line is read (see MAX_UNANSWERED_REQUESTS). */
export const MAX_UNANSWERED_BYTES = 16 * 1024 * 1024;

/**
 * MCP's stdio transport, one JSON-RPC message per line each way, for `docket mcp` on both sides of
 * it (serving a plane, and forwarding to a server). It replaces the SDK's StdioServerTransport,
 * which drops a line it cannot read with only an `onerror`, and closes for good at a line over
 * its bound: an agent then waits for an answer that never comes. Here such a line is answered as
 * JSON-RPC 2.0 says — -32700 when it is not JSON, -32600 when it is JSON but not a message — and
 * the next line is read as usual. A blank line is no message and is passed over.
 */
export class JsonLinesTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  /** The start of a line whose end has not arrived yet. */
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** The rest of an over-long line (already answered) is skipped up to its newline. */
  private skipping = false;
  private started = false;
  /** stdout is over its bound: what stdin brings is held back until it drains (see send), and these writes resolve then. */
  private draining = false;
  private drained: Array<() => void> = [];
  /** What stdin brings is held back until the turn after the lines just read (see readLines). */
  private turnPending = false;
  /** Lines read from stdin and held back until the answers to those before them had a turn. */
  private held: HeldLines | null = null;
  /** The requests read and not answered yet: what a cancel held back may be for (see readHeldCancels), and what bounds reading on (see readHeldOrWait). */
  private readonly unanswered = new UnansweredRequests();
  /** Lines are held back until answers go out: the requests read and not answered are at their bound. */
  private waitingForAnswers = false;
  /** stdin is paused: more than MAX_BACKLOG_BYTES is held back. */
  private paused = false;
  /** A line was read: a byte-order mark is skipped before the first one only. */
  private lineRead = false;
  /** stdin ended (or closed): nothing more comes. */
  private ended = false;
  private allReadWaiters: Array<() => void> = [];

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    private readonly maxLineBytes = MAX_LINE_BYTES,
  ) {}

  async start(): Promise<void> {
    if (this.started) throw new Error("JsonLinesTransport already started: Server.connect starts it.");
    this.started = true;
    this.stdin.on("data", this.onData);
    this.stdin.on("end", this.onEnd);
    this.stdin.on("close", this.onEnd);
    this.stdin.on("error", this.onStdinError);
  }

  /**
   * Resolves once stdin has ended and every line it brought was handed on (or the transport
   * closed). Lines held back when stdin ends are still read a turn at a time as stdout takes the
   * answers, so the end of stdin alone does not say that every request has been seen.
   */
  allRead(): Promise<void> {
    if (this.ended && this.held === null) return Promise.resolve();
    return new Promise((resolve) => this.allReadWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.stdin.off("data", this.onData);
    this.stdin.off("end", this.onEnd);
    this.stdin.off("close", this.onEnd);
    this.stdin.off("error", this.onStdinError);
    // Paused only when nobody else reads stdin, as the SDK's transport does.
    if (this.stdin.listenerCount("data") === 0) this.stdin.pause();
    this.partial = [];
    this.partialBytes = 0;
    this.held = null;
    this.ended = true;
    this.tellAllRead();
    this.onclose?.();
  }

  /**
   * Writes one message. Past stdout's bound (its highWaterMark) stdin is not read until what is
   * buffered has drained: an agent that writes requests without reading the answers would
   * otherwise have them pile up in memory without end.
   */
  send(message: JSONRPCMessage): Promise<void> {
    this.unanswered.answered(message);
    this.readOnIfRoom();
    return this.write(message);
  }

  /** Writes one message, past stdout's bound once it drains (see send); a message of the transport's own answers no request read. */
  private write(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.stdout.write(`${JSON.stringify(message)}\n`)) return resolve();
      if (!this.draining) {
        this.draining = true;
        this.stdout.once("drain", this.onDrain);
      }
      this.drained.push(resolve);
    });
  }

  private readonly onDrain = () => {
    this.draining = false;
    const drained = this.drained;
    this.drained = [];
    for (const resolve of drained) resolve();
    if (!this.turnPending) this.afterTurn();
  };

  /** Pauses stdin while more than MAX_BACKLOG_BYTES is held back: an agent that writes without reading fills no memory. */
  private holdInput(): void {
    if (!this.started || this.ended || this.paused || (this.held?.bytes.length ?? 0) <= MAX_BACKLOG_BYTES) return;
    this.paused = true;
    this.stdin.pause();
  }

  /** Reads stdin again once what is held back is under the bound, unless the transport closed meanwhile. */
  private resumeInput(): void {
    if (!this.paused || (this.held?.bytes.length ?? 0) > MAX_BACKLOG_BYTES) return;
    this.paused = false;
    if (this.stdin.listeners("data").includes(this.onData)) this.stdin.resume();
  }

  private readonly onStdinError = (error: Error) => this.onerror?.(error);

  /**
   * The end of stdin also ends its last line: one sent without a newline is read, not dropped.
   * What is held back then is still read a turn at a time as stdout takes the answers: read all
   * at once, fifteen thousand tools/list sent before the end were answered into memory together,
   * 1.2 GB (MCP tester, session 50).
   */
  private readonly onEnd = () => {
    if (this.ended) return;
    this.ended = true;
    if (this.held === null && (this.partial.length > 0 || this.skipping)) this.held = new HeldLines(Buffer.alloc(0), true, this.maxLineBytes);
    this.held?.endLastLine();
    if (!this.turnPending && !this.draining) this.readHeldOrWait();
    this.tellAllRead();
  };

  private readonly onData = (chunk: Buffer | string) => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    // A chunk that comes while lines wait for their turn (or for stdout's room, or for answers) waits behind them.
    if (this.held !== null || this.turnPending || this.draining || this.atBound()) {
      // Nothing else reads on then: the answers to come do (readOnIfRoom).
      if (!this.turnPending && !this.draining) this.waitingForAnswers = true;
      // A chunk's first piece continues the line begun before it only when nothing is held back.
      if (this.held === null) this.held = new HeldLines(bytes, this.partial.length > 0 || this.skipping, this.maxLineBytes);
      else this.held.append(bytes);
      this.readHeldCancels();
      this.holdInput();
      return;
    }
    const start = this.readLines(bytes);
    const rest = bytes.subarray(start);
    if (rest.includes(NEWLINE)) this.held = new HeldLines(rest, false, this.maxLineBytes);
    else this.keepPartial(rest);
    this.afterLines();
  };

  /** Reads a turn's lines of what is held back; the rest stays held. */
  private readHeld(held: HeldLines): void {
    held.dropFront(this.readLines(held.bytes));
    if (!held.holdsLine) {
      this.held = null;
      this.keepPartial(held.bytes);
    }
    this.afterLines();
  }

  /**
   * Reads the lines of `bytes`, LINES_PER_TURN of them at most, and answers where the lines not
   * read begin. The answers to what was read are written over several microtask turns (Bun may
   * even hand over the next chunk among them), so stdout fills up (see send) only after a turn:
   * without the wait that follows (afterLines), a chunk of small requests (a thousand tools/list
   * in 64 KiB) would all be answered into memory before stdout was seen to be full.
   */
  private readLines(bytes: Buffer): number {
    let start = 0;
    let lines = 0;
    // The bound is looked at before each line: a turn's 64 lines of 10 MiB each would pass it far.
    for (let end = bytes.indexOf(NEWLINE, start); end !== -1 && lines < LINES_PER_TURN && !this.atBound(); end = bytes.indexOf(NEWLINE, start)) {
      const piece = bytes.subarray(start, end);
      start = end + 1;
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      const line = this.partial.length === 0 ? piece : Buffer.concat([...this.partial, piece]);
      this.partial = [];
      this.partialBytes = 0;
      lines++;
      if (line.length > this.maxLineBytes) this.refuseTooLong();
      else this.read(line.toString("utf8"), line.length);
    }
    return start;
  }

  /** After a turn's lines: the cancels held back for what was just read, then a turn's wait before more. */
  private afterLines(): void {
    this.readHeldCancels();
    this.turnPending = true;
    this.holdInput();
    setImmediate(this.afterTurn);
    this.tellAllRead();
  }

  /**
   * Reads at once each cancel held back of a request already read and not yet answered. Held
   * back a turn, a cancel sent in the same write as its call (the call the last of the lines read
   * in a turn) came after the call's answer, and was then one of a request answered already: the
   * work ran on. A cancel of a request still held back stays behind it, in order.
   */
  private readHeldCancels(): void {
    if (this.held === null || this.unanswered.count === 0) return;
    this.held.takeCancels(
      (id) => this.unanswered.has(id),
      (line) => this.read(line, Buffer.byteLength(line)),
    );
  }

  /** Whether the requests read and not answered are at their bound: no further line is read until answers go out. */
  private atBound(): boolean {
    return this.unanswered.count >= MAX_UNANSWERED_REQUESTS || this.unanswered.bytes >= MAX_UNANSWERED_BYTES;
  }

  /** Reads a turn's lines of what is held back, or waits for answers while at the bound (readOnIfRoom ends the wait). */
  private readHeldOrWait(): void {
    if (this.held === null) return;
    if (this.atBound()) this.waitingForAnswers = true;
    else this.readHeld(this.held);
  }

  /**
   * A request was answered or cancelled: reading waiting for answers goes on, a turn later (not
   * inside the send of a server's handler). Cancels were read all along (readHeldCancels), so
   * the bound never holds back a line that would end a request it waits on.
   */
  private readOnIfRoom(): void {
    if (!this.waitingForAnswers || this.atBound()) return;
    this.waitingForAnswers = false;
    // A turn pending or stdout's drain reads on by itself.
    if (this.turnPending || this.draining) return;
    this.turnPending = true;
    setImmediate(this.afterTurn);
  }

  /** The end of stdin, once everything it brought was handed on. */
  private tellAllRead(): void {
    if (!this.ended || this.held !== null) return;
    const waiters = this.allReadWaiters;
    this.allReadWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** A turn after some lines were read: the rest held back, once stdout has room, then stdin again. */
  private readonly afterTurn = () => {
    this.turnPending = false;
    if (this.draining) return;
    this.readHeldOrWait();
    this.resumeInput();
  };

  /** The start of a line whose end is still to come; one over the bound is answered at once and skipped. */
  private keepPartial(rest: Buffer): void {
    if (this.skipping || rest.length === 0) return;
    // Said as soon as the bound is passed, not after the rest of the line has been read.
    if (this.partialBytes + rest.length > this.maxLineBytes) {
      this.partial = [];
      this.partialBytes = 0;
      this.skipping = true;
      this.refuseTooLong();
      return;
    }
    this.partial.push(rest);
    this.partialBytes += rest.length;
  }

  /** One line: a message for the server, or an error answered here. */
  private read(text: string, bytes: number): void {
    let line = text.endsWith("\r") ? text.slice(0, -1) : text;
    // A byte-order mark before the first line (a file written by Windows PowerShell, piped in) is
    // no part of the message, as `--input @file` skips it: the initialize was refused as
    // "Unrecognized token, at column 1" (MCP/CLI tester, session 48).
    if (!this.lineRead) {
      this.lineRead = true;
      if (line.startsWith("\uFEFF")) line = line.slice(1);
    }
    if (isBlankJson(line)) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      // Where, not what: the line may hold a tool's secret argument.
      const at = jsonErrorPosition(line);
      this.refuse(null, ErrorCode.ParseError, `Parse error: the line is not JSON (${jsonParseReason(error)}${at === null ? "" : `, at column ${at.column}`}). docket mcp reads one JSON-RPC message per line, as MCP's stdio transport says: send each message as JSON on a single line.`);
      return;
    }
    const checked = checkMessage(value, "line");
    if (!checked.ok) {
      // A notification is never answered (JSON-RPC 2.0), one that does not fit included: said here instead.
      if (checked.notification) this.onerror?.(new Error(`a notification that does not fit was ignored: ${checked.message.replace(/^Invalid (Request|params): /, "")}`));
      else this.refuse(checked.id, checked.code, checked.message);
      return;
    }
    // What a held-back cancel may be for (readHeldCancels); a cancelled request is never answered (MCP),
    // so its cancel is its end here. Whether the server sees the message is its own to decide.
    this.unanswered.received(checked.message, bytes);
    // A cancel ends its request: room, maybe, for the lines waiting for answers.
    this.readOnIfRoom();
    try {
      this.onmessage?.(checked.message);
    } catch (error) {
      this.onerror?.(error as Error);
    }
  }

  private refuseTooLong(): void {
    const mib = Math.round(this.maxLineBytes / (1024 * 1024));
    this.refuse(null, ErrorCode.InvalidRequest, `Invalid Request: a line is longer than ${mib} MiB, the most docket mcp reads as one message, and was skipped. Send a smaller input; for large data, pass a path to a file instead.`);
  }

  private refuse(id: RequestId | null, code: number, message: string): void {
    // JSON-RPC 2.0 answers with id null when the id could not be read; the SDK's type has no null.
    const answer = { jsonrpc: "2.0", id, error: { code, message } } as unknown as JSONRPCMessage;
    // Written, not sent: it answers no request read (one that waits with that id still waits).
    this.write(answer).catch((error) => this.onerror?.(error as Error));
  }
}

import { buildFailure, type FailureDescriptor } from "../execution/failure.ts";

/** An answer of at least this many UTF-16 units is sent as the client reads it, within the budget. */
export const LARGE_ANSWER_UNITS = 256 * 1024;

/** UTF-16 units handed to the runtime at a time: about what a socket takes at once. */
const PIECE_UNITS = 64 * 1024;

/** What a large answer is refused with: the budget is spent by answers still being sent. */
export interface AnswersBusy {
  busy: true;
  /** Bytes of large answers being sent now, and the limit. */
  in_flight: number;
  limit: number;
}

/**
 * The HTTP answers too large to hand to the runtime whole (docs/limits.md, `answer_bytes_in_flight`).
 * The runtime keeps an answer until its client has read it: a few hundred clients asking for an
 * 8 MiB output and never reading held gigabytes. A large answer is handed over a piece at a time,
 * as the client takes it, and counts against one budget from the first piece to the last (or
 * until the client leaves); one that would pass the budget is refused, the caller says 503.
 */
export interface LargeAnswers {
  /**
   * `text` as an answer body: as it is when short, else streamed and counted; `busy` when over the
   * budget and `refusable` (the answer of a read, which a retry asks again: a write's answer says
   * what was done, and goes out whatever the budget).
   */
  body(text: string, refusable: boolean): { body: string | ReadableStream<Uint8Array>; length: number } | AnswersBusy;
}

export function largeAnswers(limitBytes: number): LargeAnswers {
  let inFlight = 0;
  // A stream the runtime dropped without reading it to the end nor cancelling it gives its bytes back once collected.
  const unclaimed = new FinalizationRegistry<{ left: number }>((held) => {
    inFlight -= held.left;
    held.left = 0;
  });
  return {
    body(text, refusable) {
      if (text.length < LARGE_ANSWER_UNITS) return { body: text, length: -1 };
      const length = Buffer.byteLength(text, "utf8");
      // One answer always goes, however large: the budget bounds how many wait on slow clients.
      if (refusable && inFlight > 0 && inFlight + length > limitBytes) return { busy: true, in_flight: inFlight, limit: limitBytes };
      inFlight += length;
      const held = { left: length };
      const release = () => {
        inFlight -= held.left;
        held.left = 0;
      };
      const encoder = new TextEncoder();
      let at = 0;
      const stream = new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            let end = Math.min(text.length, at + PIECE_UNITS);
            // Never between the halves of a surrogate pair: each would be encoded as U+FFFD.
            const unit = text.charCodeAt(end - 1);
            if (end < text.length && unit >= 0xd800 && unit <= 0xdbff) end--;
            // The text stays held (and counted) until its last piece: it is what the answer costs.
            controller.enqueue(encoder.encode(text.slice(at, end)));
            at = end;
            if (at >= text.length) {
              release();
              controller.close();
            }
          },
          cancel: release,
        },
        { highWaterMark: 0 },
      );
      unclaimed.register(stream, held);
      return { body: stream, length };
    },
  };
}

/** What a large answer over the budget is told: 503, retry in a moment. */
export function answersBusyFailure(busy: AnswersBusy, ids: { request_id: string; trace_id: string }): FailureDescriptor {
  const mib = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
  return buildFailure({
    error_code: "unavailable",
    stage: "run",
    message: `This answer is too large to send now: the server is already sending ${mib(busy.in_flight)} of large answers to clients that have not read them yet, and answer_bytes_in_flight is ${mib(busy.limit)}.`,
    suggestion: "Retry in a moment; nothing was changed. An operator can raise --answer-bytes-in-flight.",
    retryability: "safe",
    context: { reason: "answers_in_flight", in_flight: busy.in_flight, limit: busy.limit, retry_after_s: 1 },
    ...ids,
  });
}

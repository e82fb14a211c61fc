import type { CancelReason } from "./protocol.ts";

/**
 * What a surface says of an `execution.cancel_requested`, by its reason (none: someone asked):
 * the CLI's lines and live view, and the cockpit's execution page (docs/protocol.md).
 */
export const CANCEL_WORDS: Record<CancelReason | "requested", string> = {
  requested: "cancellation requested",
  deadline_ms: "deadline_ms passed: the handler is asked to stop",
  timeout_ms: "timeout_ms passed: the handler is asked to stop",
  handler: "the handler stopped itself as cancelled",
};

/** The same, once the execution has ended: what happened, not what happens (`docket executions show`, the cockpit). */
export const CANCEL_WORDS_PAST: Record<CancelReason | "requested", string> = {
  requested: "cancellation was requested",
  deadline_ms: "deadline_ms passed: the handler was asked to stop",
  timeout_ms: "timeout_ms passed: the handler was asked to stop",
  handler: "the handler stopped itself as cancelled",
};

import { plainText } from "../execution/text-sanitize.ts";
import type { FailureDescriptor } from "../execution/failure.ts";
import type { ExecutionState } from "../execution/state-machine.ts";
import type { TerminalStyle } from "./_terminal.ts";

/** The CLI's exit codes (README.md). */
export const EXIT = {
  succeeded: 0,
  failed: 1,
  /** Bad flags, bad input, an unknown capability, a file that does not load: nothing ran. */
  usage: 2,
  /** 128 + SIGINT, what shells expect of a program stopped by Ctrl-C. */
  cancelled: 130,
} as const;

// Refusals that a different command line would fix: the caller's mistake, not the work's.
const USAGE_CODES = new Set(["invalid_input", "not_found", "not_runnable", "run_id_conflict"]);

/** How a `docket run` ended: a terminal state, or a refusal before any execution existed. */
export type RunEnd = { state: ExecutionState; failure: FailureDescriptor | null } | { state: null; failure: FailureDescriptor };

/** The one projection of how a run ended onto an exit code. */
export function exitCodeOf(end: RunEnd): number {
  if (end.state === null) {
    // Stopped (Ctrl-C, SIGTERM) before any execution existed: cancelled as much as one stopped later.
    if (end.failure.error_code === "cancelled") return EXIT.cancelled;
    return USAGE_CODES.has(end.failure.error_code) ? EXIT.usage : EXIT.failed;
  }
  switch (end.state) {
    case "succeeded":
      return EXIT.succeeded;
    case "cancelled":
      return EXIT.cancelled;
    default:
      return EXIT.failed;
  }
}

/**
 * The one projection of a failure onto text for a person: what went wrong, what to do, and the ids
 * that find the details in this process's log. Never a stack trace; the descriptor holds none.
 */
export function failureText(failure: FailureDescriptor, style: TerminalStyle): string {
  // A CapabilityError's message and suggestion are the handler's text: printed without escapes
  // (no colour, no window title), whatever the terminal, as every other text of a handler is.
  const message = plainText(failure.message);
  const headline = failure.error_code === "cancelled" ? style.yellow(`cancelled: ${message}`) : style.red(`error ${failure.error_code}: ${message}`);
  const lines = [headline];
  if (failure.suggestion) lines.push(`  ${plainText(failure.suggestion)}`);
  const certainty = failure.outcome_certainty === "unknown" ? "; its effect is unknown: check by hand before running it again" : "";
  lines.push(style.dim(`  correlation id ${failure.correlation_id} · request ${failure.request_id} · stage ${failure.stage} · retry: ${failure.retryability}${certainty}`));
  return `${lines.join("\n")}\n`;
}

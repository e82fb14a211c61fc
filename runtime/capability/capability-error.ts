/** Options of a typed handler failure. */
export interface CapabilityErrorOptions {
  /** Small, typed, bounded facts about the failure; shown to clients. */
  context?: Record<string, unknown>;
  retryability?: "never" | "safe" | "after_delay" | "manual_reconcile" | "requires_confirmation";
  suggestion?: string;
  /**
   * What the handler knows of its effect: `applied` (the change was made before it failed) or
   * `not_applied` (certainly nothing changed). Honoured for `effect: "write"`; left out, a write's
   * failure is `unknown`, and a read's is always `not_applied` (a read changes nothing).
   */
  outcome_certainty?: "applied" | "not_applied";
}

/** At most 64 characters: a longer one was refused later, as a thrown CapabilityError with no reason (third checking tester, session 45). */
const CODE_SHAPE = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * What a handler did wrong building a CapabilityError, as the property `capabilityErrorMisuse` of
 * the TypeError thrown instead: the failure then says what to fix without quoting the value (a
 * code made of the input may hold a secret; the log has it).
 */
export const CAPABILITY_ERROR_MISUSE = {
  code: 'its code is not a lower snake case string of at most 64 characters like "verification_failed"',
  outcome_certainty: 'its outcome_certainty is neither "applied" nor "not_applied" (leave it out when unknown)',
  retryability: 'its retryability is none of "never", "safe", "after_delay", "manual_reconcile", "requires_confirmation" (leave it out for the code\'s own)',
} as const;

/** The retryabilities a CapabilityError may give: checked here as it is made, and again by the engine of one that arrives from a copy of this module. */
export const RETRYABILITIES: ReadonlySet<unknown> = new Set(["never", "safe", "after_delay", "manual_reconcile", "requires_confirmation"]);

/** A wrong option as the server's log shows it: never a second throw (a BigInt, a cycle, a Symbol). */
function shownValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  const kind = Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : `a ${typeof value}`;
  try {
    return typeof value === "string" ? JSON.stringify(value) : typeof value === "object" ? `${kind} ${JSON.stringify(value) ?? ""}` : kind;
  } catch {
    return `${kind} JSON cannot write`;
  }
}

function misuse(message: string, what: keyof typeof CAPABILITY_ERROR_MISUSE): TypeError {
  return Object.assign(new TypeError(message), { capabilityErrorMisuse: what });
}

/**
 * A failure a handler raises on purpose: its code, message and context reach the client, with the
 * input's secret values masked (docs/security.md).
 */
export class CapabilityError extends Error {
  readonly code: string;
  readonly context: Record<string, unknown>;
  readonly retryability?: CapabilityErrorOptions["retryability"];
  readonly suggestion?: string;
  readonly outcome_certainty?: CapabilityErrorOptions["outcome_certainty"];

  constructor(code: string, message: string, options: CapabilityErrorOptions = {}) {
    super(message);
    // A string: an array or an object whose text is a code passed as one (second checking tester, session 45).
    if (typeof code !== "string" || !CODE_SHAPE.test(code)) {
      throw misuse(`CapabilityError code must be a lower snake case string of at most 64 characters (like "verification_failed"), got ${shownValue(code)}`, "code");
    }
    this.name = "CapabilityError";
    this.code = code;
    this.context = options.context ?? {};
    this.retryability = options.retryability;
    this.suggestion = options.suggestion;
    if (options.outcome_certainty !== undefined && options.outcome_certainty !== "applied" && options.outcome_certainty !== "not_applied") {
      throw misuse(`CapabilityError outcome_certainty must be "applied" or "not_applied" (leave it out when unknown), got ${shownValue(options.outcome_certainty)}`, "outcome_certainty");
    }
    this.outcome_certainty = options.outcome_certainty;
    // Refused as an unknown certainty is: ignored, it gave the code's own without a word (checking tester, session 45).
    if (options.retryability !== undefined && !RETRYABILITIES.has(options.retryability)) {
      throw misuse(`CapabilityError retryability must be one of never, safe, after_delay, manual_reconcile, requires_confirmation (leave it out for the code's own), got ${shownValue(options.retryability)}`, "retryability");
    }
  }

  /** Recognizes a CapabilityError across module copies and worker boundaries. */
  static is(error: unknown): error is CapabilityError {
    return error instanceof CapabilityError || (error instanceof Error && error.name === "CapabilityError" && typeof (error as any).code === "string");
  }
}

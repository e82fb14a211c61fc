/** Options of a typed handler failure. */
export interface CapabilityErrorOptions {
  /** Small, typed, bounded facts about the failure; shown to clients. */
  context?: Record<string, unknown>;
  retryability?: "never" | "safe" | "after_delay" | "manual_reconcile" | "requires_confirmation";
  suggestion?: string;
}

const CODE_SHAPE = /^[a-z][a-z0-9_]*$/;

/** A failure a handler raises on purpose: its code, message and context reach the client as they are. */
export class CapabilityError extends Error {
  readonly code: string;
  readonly context: Record<string, unknown>;
  readonly retryability?: CapabilityErrorOptions["retryability"];
  readonly suggestion?: string;

  constructor(code: string, message: string, options: CapabilityErrorOptions = {}) {
    super(message);
    if (!CODE_SHAPE.test(code)) {
      throw new TypeError(`CapabilityError code must be lower snake case (like "verification_failed"), got ${JSON.stringify(code)}`);
    }
    this.name = "CapabilityError";
    this.code = code;
    this.context = options.context ?? {};
    this.retryability = options.retryability;
    this.suggestion = options.suggestion;
  }

  /** Recognizes a CapabilityError across module copies and worker boundaries. */
  static is(error: unknown): error is CapabilityError {
    return error instanceof CapabilityError || (error instanceof Error && error.name === "CapabilityError" && typeof (error as any).code === "string");
  }
}

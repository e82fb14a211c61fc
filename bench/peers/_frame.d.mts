// Types of _frame.mjs (plain JS, so the peer servers can run it on Node).

/** One event envelope as JSON; `data` is the event's payload. */
export function frameOf(sequence: number, data: Record<string, unknown>, type?: string): string;

/** The same clock on every thread and process of this machine: ms since the epoch. */
export const now: () => number;

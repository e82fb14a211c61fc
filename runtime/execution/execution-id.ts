/**
 * The shape of an execution id: `x-<UTC yyyymmddThhmmssZ>-<8 lower hex>` (docs/protocol.md), its
 * month, day, hour, minute and second each in range (no id has month 13 or hour 25).
 */
export const EXECUTION_ID_PATTERN = /^x-\d{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3])[0-5]\d[0-5]\dZ-[0-9a-f]{8}$/;

/**
 * True when `value` has the shape of an execution id, its date one the calendar has (not the 30th
 * of February). Every surface checks this before any look-up.
 */
export function isExecutionId(value: unknown): value is string {
  if (typeof value !== "string" || !EXECUTION_ID_PATTERN.test(value)) return false;
  // The last day of its month: day 0 of the next (setUTCFullYear takes a year below 100 as it is).
  const last = new Date(0);
  last.setUTCFullYear(Number(value.slice(2, 6)), Number(value.slice(6, 8)), 0);
  return Number(value.slice(8, 10)) <= last.getUTCDate();
}

/** A fresh execution id stamped with `now` (UTC, second precision) and 32 random bits. */
export function newExecutionId(now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const random = crypto.getRandomValues(new Uint32Array(1))[0]!.toString(16).padStart(8, "0");
  return `x-${stamp}-${random}`;
}

/** The shape of a client-chosen `run_id`. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

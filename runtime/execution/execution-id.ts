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

/** The shape of an id with any digits for its date and time, to say which part of a date is none. */
const LOOSE_ID = /^x-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z-[0-9a-f]{8}$/;

/**
 * Why `value`, shaped like an execution id, names no moment (`there is no month 13`), for a
 * refusal to say: null when it is not of that shape at all, or when its date is one.
 */
export function impossibleIdDate(value: string): string | null {
  const parts = LOOSE_ID.exec(value);
  if (!parts) return null;
  const [, year, month, day, hour, minute, second] = parts as unknown as [string, string, string, string, string, string, string];
  if (Number(month) < 1 || Number(month) > 12) return `there is no month ${month}`;
  const last = new Date(0);
  last.setUTCFullYear(Number(year), Number(month), 0);
  if (Number(day) < 1 || Number(day) > last.getUTCDate()) return `${year}-${month} has no day ${day}`;
  if (Number(hour) > 23) return `there is no hour ${hour}`;
  if (Number(minute) > 59) return `there is no minute ${minute}`;
  if (Number(second) > 59) return `there is no second ${second}`;
  return null;
}

/** A fresh execution id stamped with `now` (UTC, second precision) and 32 random bits. */
export function newExecutionId(now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const random = crypto.getRandomValues(new Uint32Array(1))[0]!.toString(16).padStart(8, "0");
  return `x-${stamp}-${random}`;
}

/** The shape of a client-chosen `run_id`. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

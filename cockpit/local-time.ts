/**
 * The server's own clock for `format: date-time` fields (docs/cockpit.md): a date-and-time box
 * sends a wall time with no zone (`2026-12-03T10:11`), which RFC 3339 refuses. The cockpit is
 * local, so such a value is read as the server's local time: seconds are added when missing and
 * the server's UTC offset for that moment is appended. A value that has a zone is kept as typed.
 */

const WALL_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?$/u;
/** A date and time that ends in a zone (`Z`, `+01`, `-0530`, `+01:00`): the schema judges the rest. */
const ZONED_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*(?:Z|[+-]\d{2}(?::?\d{2})?)$/iu;

/** A date-time a Date holds exactly (milliseconds at most): one Run again can show as a wall time. */
const EXACT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?(?:Z|[+-]\d{2}:\d{2})$/iu;

const pad = (n: number) => String(n).padStart(2, "0");

/** `+01:00` for a Date whose local offset is one hour east of UTC. */
function offsetOf(date: Date): string {
  const east = -date.getTimezoneOffset();
  const sign = east < 0 ? "-" : "+";
  return `${sign}${pad(Math.floor(Math.abs(east) / 60))}:${pad(Math.abs(east) % 60)}`;
}

/** The time zone the server reads zone-less values in, for the form's help (`Europe/Paris`). */
export function serverTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone ?? "UTC";
}

/**
 * A date-time as RFC 3339: a zoned value unchanged, a wall time completed with seconds and the
 * server's offset at that moment; null when the text is neither.
 */
export function withServerZone(text: string): string | null {
  if (ZONED_TIME.test(text)) return text;
  const wall = WALL_TIME.exec(text);
  if (!wall) return null;
  const [, year, month, day, hour, minute, second = "00", fraction = ""] = wall;
  const date = new Date(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second));
  if (Number.isNaN(date.getTime())) return null;
  return `${year}-${month}-${day}T${hour}:${minute}:${second}${fraction}${offsetOf(date)}`;
}

/**
 * What a date-and-time box shows for a stored date-time: the same moment as the server's local
 * wall time (`2026-12-03T10:11:05`), which {@link withServerZone} turns back into that moment.
 * Any other value (no zone, finer than milliseconds) is given back as it is.
 */
export function toServerWallTime(value: string): string {
  if (!EXACT_TIME.test(value)) return value;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  const ms = date.getMilliseconds();
  const wall = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return ms === 0 ? wall : `${wall}.${String(ms).padStart(3, "0")}`;
}

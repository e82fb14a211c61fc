/**
 * The server's own clock for `format: date-time` fields (docs/cockpit.md): a date-and-time box
 * sends a wall time with no zone (`2026-12-03T10:11`), which RFC 3339 refuses. The cockpit is
 * local, so such a value is read as the server's local time: seconds are added when missing and
 * the server's UTC offset for that moment is appended. A value that has a zone is kept as typed.
 * A wall time the server's clock skips (clocks going forward) or shows twice (clocks going back)
 * is no one moment: it is refused, with what to send instead, rather than sent an hour off.
 */

const WALL_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?$/u;
/** A date and time that ends in a zone (`Z`, `+01`, `-0530`, `+01:00`): the schema judges the rest. */
const ZONED_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*(?:Z|[+-]\d{2}(?::?\d{2})?)$/iu;

/** A date-time a Date holds exactly (milliseconds at most): one Run again can show as a wall time. */
const EXACT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?(?:Z|[+-]\d{2}:\d{2})$/iu;

const DAY_MS = 86_400_000;

const pad = (n: number) => String(n).padStart(2, "0");

/** `+01:00` for an offset of one hour east of UTC, given in milliseconds. */
function offsetText(offsetMs: number): string {
  const east = Math.round(offsetMs / 60_000);
  const sign = east < 0 ? "-" : "+";
  return `${sign}${pad(Math.floor(Math.abs(east) / 60))}:${pad(Math.abs(east) % 60)}`;
}

/** The time zone the server reads zone-less values in, for the form's help (`Europe/Paris`). */
export function serverTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone ?? "UTC";
}

/** Milliseconds since the epoch of a wall time read as if it were UTC; any year, 0050 too (Date.UTC takes 50 for 1950). */
function asUtc(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  return date.getTime();
}

/** The wall time `zone`'s clocks show at `instant` (whole seconds), read as if it were UTC. */
function wallAt(instant: number, zone: string): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    era: "short",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  }).formatToParts(instant);
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  const era = parts.find((p) => p.type === "era")?.value;
  const year = era === "BC" || era === "B" ? 1 - part("year") : part("year");
  return asUtc(year, part("month"), part("day"), part("hour"), part("minute"), part("second"));
}

/** `zone`'s offset from UTC at `instant`, in milliseconds east. */
const offsetAt = (instant: number, zone: string) => wallAt(instant, zone) - Math.floor(instant / 1000) * 1000;

/**
 * What a zone-less wall time reads as in a zone: the one moment it names, or none (the clocks
 * skip it, going forward) or two (the clocks show it twice, going back), each as RFC 3339 text.
 */
export type WallReading =
  | { kind: "moment"; value: string }
  | { kind: "skipped"; zone: string; before: string; after: string }
  | { kind: "repeated"; zone: string; earlier: string; later: string };

/**
 * A date-time as RFC 3339: a zoned value unchanged, a wall time completed with seconds and the
 * server's offset at that moment (`zone`, the server's by default); null when the text is neither.
 * A wall time that names no moment or two in the zone is said so, with the offsets around it.
 */
export function withServerZone(text: string, zone: string = serverTimeZone()): WallReading | null {
  if (ZONED_TIME.test(text)) return { kind: "moment", value: text };
  const wall = WALL_TIME.exec(text);
  if (!wall) return null;
  const [, year, month, day, hour, minute, second = "00", fraction = ""] = wall;
  const local = asUtc(Number(year), Number(month), Number(day), Number(hour), Number(minute), Number(second));
  if (Number.isNaN(local)) return null;
  const written = (offset: number) => `${year}-${month}-${day}T${hour}:${minute}:${second}${fraction}${offsetText(offset)}`;
  // A zone's offset changes at most once in a day on either side: each offset around the wall
  // time that puts the zone's clocks at it is one moment it names.
  const before = offsetAt(local - DAY_MS, zone);
  const after = offsetAt(local + DAY_MS, zone);
  const offsets = [...new Set([before, offsetAt(local, zone), after])].filter((offset) => wallAt(local - offset, zone) === local).sort((a, b) => b - a);
  if (offsets.length === 0) return { kind: "skipped", zone, before: offsetText(before), after: offsetText(after) };
  if (offsets.length > 1) return { kind: "repeated", zone, earlier: written(offsets[0]!), later: written(offsets[offsets.length - 1]!) };
  return { kind: "moment", value: written(offsets[0]!) };
}

/**
 * What a date-and-time box shows for a stored date-time: the same moment as the server's local
 * wall time (`2026-12-03T10:11:05`, in `zone`, the server's by default), which
 * {@link withServerZone} turns back into that moment — unless the clocks show that wall time
 * twice. Any other value (no zone, finer than milliseconds) is given back as it is.
 */
export function toServerWallTime(value: string, zone: string = serverTimeZone()): string {
  if (!EXACT_TIME.test(value)) return value;
  const instant = Date.parse(value);
  if (Number.isNaN(instant)) return value;
  const date = new Date(wallAt(instant, zone));
  const ms = new Date(instant).getUTCMilliseconds();
  const year = date.getUTCFullYear();
  const wall = `${year < 0 ? "-" : ""}${String(Math.abs(year)).padStart(4, "0")}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`;
  return ms === 0 ? wall : `${wall}.${String(ms).padStart(3, "0")}`;
}

/** The leading `yyyy-mm-dd`, `Thh:mm`, `:ss` and a trailing `±hh:mm` offset of a date or date-time text. */
const PARTS = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?.*?(?:[+-](\d{2})(?::?(\d{2}))?)?$/iu;

/**
 * What makes a date or date-time text name no day or time of the calendar — month 13, 2026-02-30,
 * hour 24, minute 99, an offset of +25:00 — in words, or null when each part is in range (or the
 * text is not of that shape, which the caller says itself). The date-time box sent
 * `2026-13-45T99:99`, and a shape check let it through to the schema (cockpit tester, session 46).
 */
export function impossibleDateTime(text: string): string | null {
  const parts = PARTS.exec(text);
  if (!parts) return null;
  const [, year, month, day, hour, minute, second, offsetHours, offsetMinutes] = parts;
  const m = Number(month);
  if (m < 1 || m > 12) return `there is no month ${month}`;
  // The days of that month: day 0 of the next one. Set as a full year, which Date.UTC reads 0–99 as 1900–1999 (year 0 is a leap year).
  const last = new Date(0);
  last.setUTCFullYear(Number(year), m, 0);
  const days = last.getUTCDate();
  if (Number(day) < 1 || Number(day) > days) return `${year}-${month} has no day ${day} (it has ${days})`;
  if (hour !== undefined && Number(hour) > 23) return `there is no hour ${hour} (00 to 23)`;
  if (minute !== undefined && Number(minute) > 59) return `there is no minute ${minute} (00 to 59)`;
  if (second !== undefined && Number(second) > 59) return `there is no second ${second} (00 to 59)`;
  if (offsetHours !== undefined && (Number(offsetHours) > 23 || Number(offsetMinutes ?? 0) > 59)) return `there is no offset from UTC of ${offsetHours}:${offsetMinutes ?? "00"}`;
  return null;
}

import { builtinsIntact, withOriginalBuiltins } from "./_masking-builtins.ts";
import { inspect } from "node:util";
import type { JsonSchema } from "../capability/registered.ts";
import { declaredNames, isSensitiveSchema, namesAround, REDACTED, secretKeys } from "./redaction.ts";
import { holdsEscape, sanitizeLine, sanitizeText, SINGLE_SHIFT } from "./text-sanitize.ts";
import { urlEncodedForms } from "./_url-forms.ts";
import { MAX_INPUT_DEPTH, PLANE_ENVELOPE_DEPTH } from "./json-depth.ts";
import { refTarget, withRefs } from "./schema-refs.ts";
import { AUTOMATON_MAX_UNITS, INDEXED_FROM, indexSecrets, type SecretIndex } from "./_secret-index.ts";
import { eachOccurrence, unfinishedOf } from "./_secret-borders.ts";
import { COMPARE_BUDGET, maskByteRuns, numbersHoldSecret, secretBytes, type CompareBudget } from "./_byte-runs.ts";

/** Shorter values are not masked by value: "abc" would blank every word that holds it (docs/security.md). */
export const MIN_MASKED_LENGTH = 4;

/**
 * The most distinct sensitive values one input may hold. Each is searched for in every text the
 * run produces (~0.6 ms per MiB per value, the output on the main thread), so an input with
 * thousands would stall the server; more is refused as invalid input rather than left unmasked.
 */
export const MAX_SENSITIVE_VALUES = 100;

/** Replaces an execution's secret values wherever they appear in a text it produces. */
export interface SecretMask {
  /** The literal values masked (and their JSON- and URL-encoded forms), longest first; empty when there is nothing to hide. */
  readonly secrets: readonly string[];
  /** The secrets by their first units, when there are many (_secret-index.ts); null otherwise. */
  readonly index: SecretIndex | null;
  /** `text` with every occurrence of a secret replaced by `[redacted]`. */
  text(text: string): string;
  /** A copy of a JSON-like value with every string (and object key) masked; the value itself when nothing needs masking. */
  value<T>(value: T): T;
}

/**
 * The string values of `input` that its schema marks sensitive (format password, writeOnly,
 * x-docket-sensitive), at any depth, including every string inside a sensitive object or array
 * and every key of one that the schema does not declare (a sensitive record's keys), or of an
 * object whose keys the schema marks (`propertyNames`);
 * a sensitive number (a PIN, an account number) as its decimal text, the way a log line or a JSON
 * text writes it. Walks the schema as `redact` does, so the two agree on what is a secret.
 * `keys: false` leaves the keys out, for a value the schema does not describe (what an input
 * schema's transforms made: a key of it is no key the client sent).
 */
export function sensitiveValues(input: unknown, schema: JsonSchema | undefined, options: { keys?: boolean } = {}): string[] {
  const found = new Set<string>();
  collect(input, schema, { root: schema, out: found, keys: options.keys ?? true }, false, 0, new Set());
  return [...found];
}

/**
 * Deeper than this the walk stops: no admitted input gets there (inputs stop at MAX_INPUT_DEPTH, a
 * plane capability's envelope adds PLANE_ENVELOPE_DEPTH); it only keeps a stack from overflowing.
 * Counted by the value's own levels, so a recursive schema's secrets are found all the way down.
 */
const MAX_WALK_DEPTH = MAX_INPUT_DEPTH + PLANE_ENVELOPE_DEPTH + 1;

/**
 * `followed`: the `$ref` targets already walked for this very value, so that a cycle of references
 * ends (collecting twice finds nothing new); the input schema is `walk.root`, where they resolve.
 */
function collect(value: unknown, schema: JsonSchema | undefined, walk: { root: unknown; out: Set<string>; keys: boolean }, inside: boolean, depth: number, followed: Set<object>, around?: ReadonlySet<string>): void {
  if (depth > MAX_WALK_DEPTH || value === undefined || value === null) return;
  const out = walk.out;
  const secret = inside || isSensitiveSchema(schema);
  if (schema && typeof schema === "object" && !secret) {
    // A value that could match a sensitive branch is a secret: when in doubt, hide (as `redact`).
    // A name one branch declares is no key of another branch's record (redaction.ts, namesAround).
    const names = namesAround(value, schema, walk.root, around);
    for (const key of ["anyOf", "oneOf", "allOf"] as const) {
      const branches = schema[key];
      if (Array.isArray(branches)) for (const branch of branches) collect(value, branch as JsonSchema, walk, false, depth, followed, names);
    }
    const target = refTarget(schema, walk.root);
    if (target && !followed.has(target)) {
      followed.add(target);
      collect(value, target, walk, false, depth, followed, names);
    }
  }
  if (typeof value === "string") {
    if (secret) out.add(value);
    return;
  }
  if (typeof value === "number") {
    if (secret && Number.isFinite(value)) out.add(String(value));
    return;
  }
  if (typeof value !== "object") return;
  // Inside a secret no branch is walked; a `$ref` still says which fields it declares, and what its items are.
  if (secret && schema && typeof schema === "object") schema = withRefs(schema, walk.root);
  if (Array.isArray(value)) {
    const tuple = Array.isArray(schema?.prefixItems) ? (schema.prefixItems as JsonSchema[]) : Array.isArray(schema?.items) ? (schema.items as JsonSchema[]) : [];
    const items = schema?.items && typeof schema.items === "object" && !Array.isArray(schema.items) ? (schema.items as JsonSchema) : undefined;
    value.forEach((item, i) => collect(item, tuple[i] ?? items, walk, secret, depth + 1, new Set()));
    return;
  }
  const properties = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  const extra = schema?.additionalProperties && typeof schema.additionalProperties === "object" ? (schema.additionalProperties as JsonSchema) : undefined;
  // Keys are secrets inside a secret, and where the schema marks them (a record's `propertyNames`).
  const keysSecret = walk.keys && (secret || (schema !== undefined && typeof schema === "object" && secretKeys(schema, walk.root)));
  const declared = keysSecret ? declaredNames(schema, walk.root, new Set(around)) : null;
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    // A key of a secret object is part of the secret (a sensitive record's keys are its data), unless
    // the schema names it: a declared field name is published with the schema, and masking it would
    // blank a word like "user" in every line.
    if (declared && !declared.has(key) && key.length >= MIN_MASKED_LENGTH) out.add(key);
    // Own properties only: a key like `constructor` is a record's data, not Object's method.
    collect(child, (Object.hasOwn(properties, key) ? properties[key] : undefined) ?? extra, walk, secret, depth + 1, new Set());
  }
}


/** A line of a multi-line secret at least this long is masked on its own too (see createSecretMask). */
const MIN_LINE_LENGTH = 8;

/**
 * How many levels of escaping a secret's forms are made for, by its length: three (a JSON text
 * inside a JSON text inside another) up to 4 KiB — passwords, tokens, a service account's key —,
 * two up to 64 KiB (a kubeconfig of 20 KB logged inside a JSON body leaked whole at one: third
 * checking tester), one past it (a certificate bundle). Each level may double a
 * form's length and multiply their number by five, and every form counts against what an input's
 * secrets may come to (AUTOMATON_MAX_UNITS).
 */
function escapeLevels(length: number): number {
  return length <= 4 * 1024 ? 3 : length <= 64 * 1024 ? 2 : 1;
}

/**
 * A text as JSON writes it inside a string, and as Bun's own inspect (`Bun.inspect`, which a
 * handler may call) writes it: JSON's escapes with their hex in upper case (`\u001B`: third
 * checking tester, session 47).
 */
function jsonForms(text: string): string[] {
  const json = JSON.stringify(text).slice(1, -1);
  const upper = json.replace(/\\u([0-9a-f]{4})/g, (escape, hex: string) => (/[a-f]/.test(hex) ? `\\u${hex.toUpperCase()}` : escape));
  return upper === json ? [json] : [json, upper];
}

/**
 * `form` as it reads inside a JSON string and inside a string `console.log` prints (each way it
 * may quote it), then each of those escaped again the same ways, escapeLevels deep; when more than
 * one level, each also as made safe to print (JSON leaves DEL and C1 characters raw, and the
 * sanitizer then takes them out), and the first JSON form URL-encoded (a JSON text put into a
 * query string): the forms that differ from `form`.
 */
function* escapedForms(form: string): Generator<string> {
  const json = JSON.stringify(form).slice(1, -1);
  const levels = escapeLevels(form.length);
  if (levels === 1) {
    // A long one (a certificate bundle of thousands of lines) once each way, one at a time: the
    // caller stops as soon as the forms are past the bound (megabytes each).
    for (const escaped of jsonForms(form)) {
      if (escaped === form) continue;
      yield escaped;
      // Made safe too: JSON leaves DEL and C1 characters raw, and the sanitizer takes them out (fourth checking tester).
      for (const safe of new Set([sanitizeLine(escaped), sanitizeText(escaped)])) if (safe !== escaped && safe !== form) yield safe;
    }
    // console.log prints a string's first 10,000 characters (then `... N more characters`): those,
    // in each quoting, are what it shows of one this long — and inspecting megabytes of control
    // characters whole took 4 s.
    const head = form.slice(0, INSPECT_CUT);
    for (const inspected of new Set(inspectedForms(head))) if (inspected !== head && inspected !== json) yield inspected;
    return;
  }
  // Each form as soon as it is made, so that the caller stops at its bound without making the rest
  // (100 values of 4,096 DEL held the main thread 1.5 s a start before it was refused: third checking tester).
  const found = new Set<string>([form]);
  let level = [form];
  for (let depth = 0; depth < levels && level.length > 0; depth++) {
    const next: string[] = [];
    for (const text of level) {
      // Every quoting at every level: inspect picks its quote from the whole string it prints,
      // quotes a level before added included (a checking tester found 7,659 of 12,210 wrappings
      // leaking when deeper levels took inspect's choice for the form alone).
      for (const escaped of [...jsonForms(text), ...inspectedForms(text)]) {
        if (found.has(escaped)) continue;
        found.add(escaped);
        next.push(escaped);
        yield escaped;
        for (const safe of [sanitizeLine(escaped), sanitizeText(escaped)]) {
          if (found.has(safe)) continue;
          found.add(safe);
          yield safe;
        }
      }
    }
    level = next;
  }
  if (json !== form && !found.has(encodeURIComponent(json))) yield encodeURIComponent(json);
}

/**
 * `text` as `util.inspect` writes it inside a string in each quoting it may choose: the quote is
 * picked from the whole string printed (single, else double when it holds `'` and no `"`, else a
 * backtick), not from the secret alone — a secret beside other quotes in a line is escaped the
 * other way (checking tester, session 47). Made by printing the text with a tail that forces the
 * quoting, then cutting that tail off; never cut at inspect's 10,000 characters.
 */
/** Where `util.inspect` cuts a string by default (its `maxStringLength`). */
const INSPECT_CUT = 10_000;

/** Inspect's options for a form: never cut at 10,000 characters, never laid over lines (a multi-line string's lines are masked one by one). */
const INSPECT_WHOLE = { maxStringLength: Infinity, breakLength: Infinity } as const;

function inspectedForms(text: string): string[] {
  const quoted = (tail: string) => {
    const printed = inspect(text + tail, INSPECT_WHOLE);
    const end = inspect(tail, INSPECT_WHOLE).length - 1;
    return printed.slice(1, printed.length - end);
  };
  const forms = [inspect(text, INSPECT_WHOLE).slice(1, -1), quoted("'\"`")];
  // Double quotes are chosen only for a string holding none; a backtick only when it holds no backtick nor `${`.
  if (!text.includes('"')) forms.push(quoted("'"));
  if (!text.includes("`") && !text.includes("${")) forms.push(quoted("'\""));
  return forms;
}

/**
 * A secret longer than this is not masked in its URL-encoded forms: no URL carries one (servers
 * refuse a request line past 8–16 KiB), and its dozen encodings cost the main thread about a
 * second per MiB of secret, for each input that holds it (a certificate bundle as a secret).
 */
export const URL_FORMS_MAX_LENGTH = 16 * 1024;

/** The mask that changes nothing: an execution whose input holds no secret. */
export const NO_MASK: SecretMask = { secrets: [], index: null, text: (text) => text, value: (value) => value };

/**
 * A mask for these secret values. Values shorter than MIN_MASKED_LENGTH are left alone; each
 * remaining value is also masked as it appears JSON-escaped (a handler that logs
 * `JSON.stringify(input)`) and URL-encoded (a credential put into a URL, each common way).
 */
export function createSecretMask(values: Iterable<string>): SecretMask {
  return buildMask(values, Infinity) as SecretMask;
}

/**
 * The mask of an input's secrets, as createSecretMask makes it; or, when its texts to find come to
 * more than AUTOMATON_MAX_UNITS and there are enough of them to be indexed, how many units they
 * came to when making them stopped (at least that many): such an input is refused, and one of
 * megabytes of multi-line secrets costs the main thread no more than making a mask at the bound.
 */
export function admissionMask(values: readonly string[]): SecretMask | { units: number } {
  return buildMask(values, AUTOMATON_MAX_UNITS);
}

/**
 * How many times AUTOMATON_MAX_UNITS the forms of fewer secrets than are indexed may come to: they
 * are searched for one by one, without an automaton, so more is allowed — an 8 MiB value's forms,
 * the input's bound, each a search of its own; not a hundred million units.
 */
const FEW_TEXTS_OVER = 8;

function buildMask(given: Iterable<string>, maxUnits: number): SecretMask | { units: number } {
  const values = [...given];
  const secrets = new Set<string>();
  let units = 0;
  /** Adds a text to find; true once they are past `maxUnits` (checked at each, a URL form of a long value is megabytes). */
  const add = (text: string): boolean => {
    if (!secrets.has(text)) {
      secrets.add(text);
      units += text.length;
    }
    // Past the bound with enough texts to be indexed (an automaton that large), or past it many
    // times over however few: a value of megabytes of control characters made 132 million units
    // of forms and held the main thread 10 s (checking tester, session 47).
    return units > maxUnits && (secrets.size >= INDEXED_FROM || units > maxUnits * FEW_TEXTS_OVER);
  };
  for (const value of values) {
    // Texts are made safe to print before they are masked (docs/security.md), so a secret holding
    // a line break or a control character (a token read from a file with its newline, a PEM key)
    // appears in them as it does made safe: each form is masked.
    // Made one at a time, each checked against the bound before the next is made.
    const made = new Set<string>();
    for (const make of [() => value, () => sanitizeLine(value), () => sanitizeText(value)]) {
      const form = make();
      if (made.has(form)) continue;
      made.add(form);
      if (form.length < MIN_MASKED_LENGTH) continue;
      if (add(form)) return { units };
      // Escaped as a JSON string, and as console.log writes it inside an object (`{ key:
      // 'p\'a"ss\tword' }`), quotes and control characters escaped its own way; and escaped again,
      // for a JSON text put into another (a request logged with its body already a JSON string) —
      // only a secret holding a quote, a backslash or a control character has such forms.
      for (const escaped of escapedForms(form)) if (add(escaped)) return { units };
      // A URL drops a secret's tabs and line breaks: what is left of a short one may be shorter still.
      if (form.length <= URL_FORMS_MAX_LENGTH) for (const encoded of urlEncodedForms(form)) if (encoded.length >= MIN_MASKED_LENGTH && add(encoded)) return { units };
    }
    // Each line of a multi-line secret (a PEM key) on its own: console.log of an object writes such
    // a string one line at a time, joined by `' +`; a line that short is no secret of its own.
    const lines = value.split(/\r?\n/);
    if (lines.length > 1) {
      for (const line of lines) {
        if (line.trim().length < MIN_LINE_LENGTH) continue;
        // As console.log writes that line of it inside an object: escaped its own way.
        if (add(line)) return { units };
        // As console.log writes it inside an object, and as JSON writes it (a list of the lines, `t.split("\n")`, logged as JSON: third checking tester).
        for (const escaped of [...inspectedForms(line), ...jsonForms(line)]) if (escaped !== line && add(escaped)) return { units };
      }
    }
  }
  if (secrets.size === 0) return NO_MASK;
  const list = [...secrets].sort((a, b) => b.length - a.length);
  const index = indexSecrets(list);
  // And each secret's bytes written as numbers (a Buffer the console prints: _byte-runs.ts).
  const bytes = secretBytes(values);
  // With the built-ins masking calls as the thread began (a worker's handler may have replaced
  // them); a text that cannot be masked with them is hidden whole. One budget of byte comparisons
  // per text, or per value whole (an output of 60,000 arrays: _byte-runs.ts).
  const maskWithin = (input: string, budget: CompareBudget): string => {
    const masked = () => maskByteRuns(maskText(input, list, index), bytes, budget);
    return builtinsIntact() ? masked() : withOriginalBuiltins(masked, () => REDACTED);
  };
  const text = (input: string) => maskWithin(input, { left: COMPARE_BUDGET });
  const value = <T>(input: T): T => {
    const budget = { left: COMPARE_BUDGET };
    return maskValue(input, (each) => maskWithin(each, budget), 0, (numbers) => numbersHoldSecret(numbers, bytes, budget));
  };
  return { secrets: list, index, text, value };
}

/**
 * `text` masked as written, when making it safe to print could take part of a secret with it, for
 * the mask to find the rest no more: an escape left unfinished just before a secret (`ESC [` then
 * `hunter2…`) ends at its first letter (`ESC [ h` is a sequence of its own), and made safe the text
 * reads `unter2…`. Other control characters go alone, taking nothing with them. Texts are masked
 * once more after they are made safe (docs/security.md); a text with no escape, the common case,
 * costs one regex test here.
 */
export function maskedBeforeSafe(text: string, mask: (text: string) => string): string {
  return holdsEscape(text) ? mask(text) : text;
}

/**
 * How many units at the end of `text` (already masked) are the start of a secret not finished
 * there: the longest such tail, 0 if none. A text written in pieces holds that tail back for the
 * next piece, so that a secret written across two pieces is masked whole.
 */
export function unfinishedSecretLength(text: string, secrets: readonly string[], index: SecretIndex | null = null): number {
  if (index !== null) return index.unfinished(text);
  let longest = 0;
  for (const secret of secrets) longest = Math.max(longest, unfinishedOf(text, secret, secrets));
  return longest;
}

/** A control character alone (not a line break nor a tab), a soft hyphen, a zero-width or bidirectional format character. */
const UNSEEN_CHARACTER = String.raw`[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u200b-\u200d\u2060\ufeff\u202a-\u202e\u2066-\u2069]`;

/**
 * What a terminal shows nothing of, yet lets the text around it read as one word: escape
 * sequences (a colour, a single shift `ESC O` with the character it shifts, a window title), the
 * same written 8-bit (C1), a colour escape as JSON and `console.log` spell it inside a string
 * (`\u001b[31m`, `\x1B[31m`), a control character alone, a zero-width or bidirectional format
 * character. Line breaks and tabs show, and stay. Matched in this order at each place.
 */
const UNSEEN = new RegExp(
  [
    // A string (OSC, DCS, SOS, PM, APC) with its terminator.
    String.raw`(?:\u001b[\]PX^_k]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u0018\u001a\u001b\u0080-\u009f]*(?:\u0007|\u001b\\|\u009c)`,
    // A CSI, 7-bit or 8-bit.
    String.raw`(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]`,
    // A single shift and the one character it shifts, as the sanitizer removes them.
    SINGLE_SHIFT.source,
    // Any other escape: ESC, intermediates, a final byte.
    String.raw`\u001b[\u0020-\u002f]*[\u0030-\u007e]`,
    // A colour escape spelled as JSON or console.log write it inside a string.
    String.raw`\\(?:u001[bB]\[|x1[bB]\[|u009[bB]|x9[bB])[0-9;:]*m`,
    UNSEEN_CHARACTER,
  ].join("|"),
  "g",
);
const HAS_UNSEEN = new RegExp(`${UNSEEN_CHARACTER}|\\\\[ux][019]`);

/**
 * `text` as it reads, what {@link UNSEEN} matches left out, with the index each of its units has
 * in `text`; null when nothing is left out.
 */
export function asItReads(text: string): { visible: string; at: number[] } | null {
  if (!HAS_UNSEEN.test(text)) return null;
  let visible = "";
  const at: number[] = [];
  let from = 0;
  for (const unseen of text.matchAll(UNSEEN)) {
    for (let i = from; i < unseen.index; i++) at.push(i);
    visible += text.slice(from, unseen.index);
    from = unseen.index + unseen[0].length;
  }
  if (from === 0) return null;
  for (let i = from; i < text.length; i++) at.push(i);
  return { visible: visible + text.slice(from), at };
}

/**
 * Every occurrence of every secret, overlapping ones included, becomes one `[redacted]`: the
 * covered ranges are merged first, so two secrets that overlap leave no piece of either behind.
 * A text holding what a terminal does not show (a colour escape, a control or zero-width
 * character) is also searched as it reads: `hunter2s\x1b[0mecretXYZ` (a colour reset at a
 * write's boundary) shows the secret whole, and the whole span becomes `[redacted]`.
 */
function maskText(input: string, secrets: readonly string[], index: SecretIndex | null): string {
  const ranges = rangesOf(input, secrets, index);
  const cut = cutSecretTails(input, secrets, index);
  if (cut.length > 0) return redacted(input, [...(ranges ?? []), ...cut]);
  return ranges === null ? input : redacted(input, ranges);
}

/**
 * Where `util.inspect` cut a string past its `maxStringLength` (10,000 characters): its closing
 * quote (escaped, once or more, when that print was put in JSON strings), a colour's end when
 * printed in colour (written as an escape once in JSON), then `... N more characters`.
 */
const CUT_STRING = /\\*['"`](?:\u001b\[[0-9;]*m|\\+(?:u001[bB]|x1[bB])\[[0-9;]*m)?\.\.\. \d+ more characters?/g;

/**
 * The starts of secrets a printed string was cut in: `console.log` of a string longer than 10,000
 * characters prints its first 10,000, and a long secret after a prefix (`"Bearer " + token`) is
 * cut where no whole form of it stands — some thousands of its characters shown (checking tester,
 * session 47). The tail before each cut that begins a secret (4 characters or more) is hidden.
 */
function cutSecretTails(input: string, secrets: readonly string[], index: SecretIndex | null): Array<[number, number]> {
  if (!input.includes(" more character") || secrets.length === 0) return [];
  const longest = secrets[0]!.length;
  const found: Array<[number, number]> = [];
  let previous = 0;
  for (const match of input.matchAll(CUT_STRING)) {
    const end = match.index;
    // Only the text since the last marker: a cut string ends at its own marker, so the looks add up
    // to the text's length at most (each looking back the longest secret, a text of a thousand
    // markers held the main thread 34 s: checking tester, session 47).
    const start = Math.max(previous, end - longest);
    previous = end + match[0].length;
    const tail = unfinishedSecretLength(input.slice(start, end), secrets, index);
    if (tail >= MIN_MASKED_LENGTH) found.push([end - tail, end]);
  }
  return found;
}

/** Where secrets stand in `input`, as written and as it reads; null when nowhere. */
function rangesOf(input: string, secrets: readonly string[], index: SecretIndex | null): Array<[number, number]> | null {
  const ranges = occurrences(input, secrets, index, null);
  const reads = asItReads(input);
  return reads === null ? ranges : occurrences(reads.visible, secrets, index, ranges, reads.at);
}

/** `input` with each run of overlapping `ranges` (at least one) replaced by one `[redacted]`. */
function redacted(input: string, ranges: Array<[number, number]>): string {
  ranges.sort((a, b) => a[0] - b[0]);
  let out = "";
  let copied = 0;
  let [start, end] = ranges[0]!;
  for (const [a, b] of ranges) {
    if (a <= end) {
      end = Math.max(end, b);
      continue;
    }
    out += input.slice(copied, start) + REDACTED;
    copied = end;
    [start, end] = [a, b];
  }
  return out + input.slice(copied, start) + REDACTED + input.slice(end);
}

/**
 * `left` and `right` each masked, as parts of the one text they make, when a secret stands across
 * where they meet: each part of it is `[redacted]` on its side. Null when no secret does. What a
 * handler prints to one stream through two channels (`process.stdout.write("hunt")`, then
 * `console.log("er2…")`) is one text where it is printed.
 */
export function maskAcross(left: string, right: string, mask: SecretMask): [string, string] | null {
  if (mask.secrets.length === 0 || left === "" || right === "") return null;
  const ranges = rangesOf(left + right, mask.secrets, mask.index);
  const meet = left.length;
  if (ranges === null || !ranges.some(([start, end]) => start < meet && end > meet)) return null;
  const leftRanges: Array<[number, number]> = [];
  const rightRanges: Array<[number, number]> = [];
  for (const [start, end] of ranges) {
    if (start < meet) leftRanges.push([start, Math.min(end, meet)]);
    if (end > meet) rightRanges.push([Math.max(start, meet) - meet, end - meet]);
  }
  return [leftRanges.length > 0 ? redacted(left, leftRanges) : left, rightRanges.length > 0 ? redacted(right, rightRanges) : right];
}

/** Where secrets of `mask` stand in `text`, as written: ranges that cover every one, unordered, possibly overlapping. */
export function secretsIn(text: string, mask: SecretMask): Array<[number, number]> {
  return mask.secrets.length === 0 ? [] : (occurrences(text, mask.secrets, mask.index, null) ?? []);
}

/**
 * The ranges of `text` (in the input's indexes through `at`, when `text` is a view of it) where a
 * secret stands, added to `ranges`; null when none.
 */
function occurrences(text: string, secrets: readonly string[], index: SecretIndex | null, ranges: Array<[number, number]> | null, at?: number[]): Array<[number, number]> | null {
  const place = (start: number, end: number): [number, number] => (at === undefined ? [start, end] : [at[start]!, at[end - 1]! + 1]);
  if (index !== null) {
    // One overlapping or back-to-back with the last is one range with it, as they come: a text that
    // repeats a secret a million times stays one range to sort. The rest are merged after sorting.
    let last: [number, number] | null = null;
    let lastStart = -1;
    let lastEnd = -1;
    index.find(text, (start, end) => {
      if (last !== null && start <= lastEnd && end >= lastStart) {
        if (start < lastStart) last[0] = place((lastStart = start), end)[0];
        if (end > lastEnd) last[1] = place(start, (lastEnd = end))[1];
      } else {
        lastStart = start;
        lastEnd = end;
        (ranges ??= []).push((last = place(start, end)));
      }
    });
    return ranges;
  }
  for (const secret of secrets) {
    let last: [number, number] | null = null;
    let lastEnd = -1;
    eachOccurrence(text, secret, secrets, (found) => {
      // Back-to-back or overlapping occurrences of one secret make one range, so a text that
      // repeats it a million times stays one range to sort, not a million.
      if (last !== null && found <= lastEnd) {
        lastEnd = found + secret.length;
        last[1] = place(found, lastEnd)[1];
      } else {
        lastEnd = found + secret.length;
        (ranges ??= []).push((last = place(found, lastEnd)));
      }
    });
  }
  return ranges;
}

function maskValue<T>(value: T, text: (input: string) => string, depth: number, holdsBytes: (numbers: number[]) => boolean = () => false): T {
  if (typeof value === "string") return text(value) as T;
  // A number that is a secret (a sensitive number returned as it came) becomes the string
  // "[redacted]", its type given up for it; one that only holds its digits (pin * 10) is another
  // number, and stays (completionOf refuses an output whose schema then no longer fits).
  if (typeof value === "number") return (isSecretNumber(value, text) ? REDACTED : value) as T;
  if (value === null || typeof value !== "object" || depth > 256) return value;
  if (Array.isArray(value)) {
    // An array of whole numbers holding a secret's bytes (a Buffer returned, `Array.from(buffer)`, with
    // a number beside them past a byte): "[redacted]" in its place, as a secret number is (third and
    // fourth checking testers, session 46).
    if (value.length >= 4 && value.every((item) => Number.isInteger(item)) && holdsBytes(value)) return REDACTED as unknown as T;
    return value.map((item) => maskValue(item, text, depth + 1, holdsBytes)) as T;
  }
  // A String object crosses from a worker as one, and JSON writes its text: it is that text.
  if (Object.prototype.toString.call(value) === "[object String]") return text(String(value)) as T;
  const proto = Object.getPrototypeOf(value);
  // A Date, Map or typed array a transform produced carries no text a client reads as such.
  if (proto !== Object.prototype && proto !== null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    const masked = text(key);
    // An own "__proto__" key (JSON.parse makes one) stays a key: assigned, it would set the copy's prototype and vanish.
    if (masked === "__proto__") Object.defineProperty(copy, masked, { value: maskValue(child, text, depth + 1, holdsBytes), enumerable: true, writable: true, configurable: true });
    else copy[masked] = maskValue(child, text, depth + 1, holdsBytes);
  }
  return copy as T;
}

/** The mask of an input's secrets as the engine collected them; NO_MASK when there are none. */
export function maskOf(secrets: readonly string[]): SecretMask {
  return secrets.length === 0 ? NO_MASK : createSecretMask(secrets);
}

/**
 * Whether masking changed anything of `value`, `masked` being what `mask.value` made of it: a
 * string or a key that held a secret, or a number that is one. What it changed may no longer fit
 * a schema (a pattern, a length, a number). Read by comparing the two, not by masking again: an
 * output of megabytes is masked once on the main thread.
 */
export function maskChanged(value: unknown, masked: unknown, depth = 0): boolean {
  if (Object.is(value, masked)) return false;
  if (typeof value === "string" || typeof value === "number") return true;
  if (value === null || typeof value !== "object" || depth > 256) return false;
  // A String object is masked as its text.
  if (typeof masked === "string") return String(value) !== masked;
  if (masked === null || typeof masked !== "object") return true;
  if (Array.isArray(value)) return !Array.isArray(masked) || value.length !== masked.length || value.some((item, i) => maskChanged(item, masked[i], depth + 1));
  const keys = Object.keys(value);
  const maskedKeys = Object.keys(masked);
  if (keys.length !== maskedKeys.length || keys.some((key, i) => key !== maskedKeys[i])) return true;
  return keys.some((key) => maskChanged((value as Record<string, unknown>)[key], (masked as Record<string, unknown>)[key], depth + 1));
}

/** Whether a number is a secret itself (its decimal text masks whole), as a sensitive number of the input is. */
export function isSecretNumber(value: number, text: (input: string) => string): boolean {
  return text(String(value)) === REDACTED;
}

import { createReadStream } from "node:fs";
import { readBounded } from "../server/read-bounded.ts";
import { resolve } from "node:path";
import { nearestField, schemaBranches } from "../execution/undeclared-fields.ts";
import { jsonErrorPosition, jsonParseReason } from "../execution/json-position.ts";
import { LIMIT_SPECS, limitEnvName } from "../execution/limits.ts";
import { formatBytes } from "../execution/storage-gate.ts";
import * as v from "valibot";

/** Where `--input` text comes from and how much of it is read, injected so that tests need no real stdin. */
export interface InputSources {
  cwd: string;
  /** The process's stdin, read as it comes. */
  stdin(): AsyncIterable<Uint8Array | string>;
  /** The most bytes an input may have (the input_bytes limit): no more than one byte past it is read. */
  maxBytes: number;
  /** A line for stderr: that the read waits for input that has not come (a FIFO with no writer, a terminal). */
  say(line: string): void;
  /** How long a read waits with nothing read before it says so; 1 s by default. */
  waitNoticeMs?: number;
}

/**
 * `--input` read and parsed, or the sentence that says what is wrong with it (and, for a flag
 * other than `--input`, what to do). `fromEnv`: the `--input-env` fields given (dotted paths), for
 * the run to check against the capability's input; `unsetEnv`: why the first of their variables
 * gives no value, refused once the fields are checked — a field the capability does not have is
 * the mistake to fix first, whatever its variable holds.
 */
export type ParsedInput = { ok: true; value: unknown; fromEnv?: string[]; unsetEnv?: string } | { ok: false; message: string; suggestion?: string };

/** What to do about an `--input-env` the run refuses: nothing ran. */
export const INPUT_ENV_SUGGESTION = "Correct --input-env as the message says (field=VARIABLE: a field of the capability's input, a variable set in this environment), then run it again; nothing ran.";

const EXAMPLE = `--input '{"path":"src"}', --input @input.json or --input - (read stdin)`;

/**
 * Reads `--input` in its three forms: inline JSON, `@path` (a file, relative to the working
 * directory) and `-` (stdin). Absent → `undefined`, so the capability's defaults apply. A file or
 * stdin is read up to `maxBytes` and refused past it, so that an endless one (`@/dev/zero`, `yes |`)
 * costs no more memory than the largest input (docs/limits.md).
 */
export async function readInput(flag: string | undefined, sources: InputSources): Promise<ParsedInput> {
  if (flag === undefined) return { ok: true, value: undefined };
  if (flag !== "-" && !flag.startsWith("@")) return parseJson(flag, "--input");
  // `@` alone named the working folder, and was refused as "a folder" (MCP/CLI tester, session 48).
  if (flag.trim() === "@") return { ok: false, message: `--input @ names no file: give its path after the @, e.g. --input @input.json, or - to read stdin.` };
  const path = flag === "-" ? null : resolve(sources.cwd, flag.slice(1));
  const origin = path === null ? "--input - (stdin)" : `--input ${flag}`;
  let read: Uint8Array | "too_large";
  try {
    read = await readWaited(path === null ? sources.stdin() : createReadStream(path), origin, sources);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "the file does not exist" : code === "EISDIR" ? "it is a folder" : (error as Error).message;
    return { ok: false, message: `Cannot read ${origin}: ${why}${path === null ? "" : ` (${path})`}. Give a JSON file, e.g. ${EXAMPLE}.` };
  }
  if (read === "too_large") {
    const spec = LIMIT_SPECS.input_bytes;
    return {
      ok: false,
      message:
        `${origin} is larger than the input limit of ${formatBytes(sources.maxBytes)} (input_bytes, ${sources.maxBytes} bytes); it was not read past that. ` +
        `Give a smaller input, or raise the limit with ${limitEnvName("input_bytes")} (at most ${formatBytes(spec.max)}, ${spec.max}).`,
    };
  }
  const text = inputText(read);
  if (text === null) return { ok: false, message: `${origin} is not valid ${read[0] === 0xff || read[0] === 0xfe ? "UTF-16 (its byte-order mark says so)" : "UTF-8"}: some bytes are no text in it. Save the input as UTF-8 JSON.` };
  return parseJson(text, origin);
}

/**
 * A file's or stdin's text: UTF-8, or UTF-16 when it begins with that byte-order mark; null when
 * its bytes are no text in that encoding (they were never silently replaced, which would change
 * the input the handler gets without a word). A leading byte-order mark is not part of the JSON:
 * Windows PowerShell 5 writes one (Out-File, `>`), and JSON.parse would refuse it as an
 * unrecognized token at line 1, column 1.
 */
function inputText(bytes: Uint8Array): string | null {
  const encoding = bytes[0] === 0xff && bytes[1] === 0xfe ? "utf-16le" : bytes[0] === 0xfe && bytes[1] === 0xff ? "utf-16be" : "utf-8";
  try {
    // TextDecoder drops the mark of its own encoding.
    return new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** How long a read of a file or stdin may wait with nothing read before it says so. */
const WAIT_NOTICE_MS = 1000;

/**
 * The bytes of `chunks`, at most `maxBytes` of them (readBounded), or "too_large". Said once on
 * stderr when nothing has come after a second: a FIFO with no writer, or a terminal nobody types
 * in, otherwise holds the run without a word.
 */
async function readWaited(chunks: AsyncIterable<Uint8Array | string>, origin: string, sources: InputSources): Promise<Uint8Array | "too_large"> {
  const notice = setTimeout(() => {
    sources.say(`docket: waiting for ${origin}: nothing has come yet (a pipe, a FIFO or a terminal gives its input once written and closed; Ctrl-C stops).`);
  }, sources.waitNoticeMs ?? WAIT_NOTICE_MS);
  try {
    return (await readBounded(noticeEndsAtFirst(chunks, notice), sources.maxBytes)) ?? "too_large";
  } finally {
    clearTimeout(notice);
  }
}

/** `chunks` as they come, the waiting notice called off at the first. */
async function* noticeEndsAtFirst(chunks: AsyncIterable<Uint8Array | string>, notice: ReturnType<typeof setTimeout>): AsyncIterable<Uint8Array | string> {
  for await (const chunk of chunks) {
    clearTimeout(notice);
    yield chunk;
  }
}

function parseJson(text: string, origin: string): ParsedInput {
  if (text.trim() === "") return { ok: false, message: `${origin} is empty; give a JSON value, e.g. ${EXAMPLE}.` };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    // Never a word of the text: it may hold a secret, and this line goes to a terminal, a CI log
    // and the job's summary, before any field is known to be sensitive. The parser's reason loses
    // what it quotes ("Unexpected identifier "hunter2""); where the problem is says the rest.
    const reason = jsonParseReason(error);
    const at = jsonErrorPosition(text);
    const where = at === null ? "" : ` at line ${at.line}, column ${at.column}`;
    return { ok: false, message: `${origin} is not valid JSON (${reason})${where}; the text is not repeated here, as it may hold a secret. Give a JSON value, e.g. ${EXAMPLE}.` };
  }
}

const INPUT_ENV = /^([A-Za-z_][A-Za-z0-9_.-]*)=([A-Za-z_][A-Za-z0-9_]*)$/;

/**
 * `--input-env field=VAR` (repeatable): the input's `field` is the environment variable's value,
 * so a secret never stands on the command line (where `ps` shows it); `auth.token` is the field
 * `token` of the object `auth` (made when absent). Applied over `--input` (a file of the input's
 * other fields, with a placeholder where the secret goes); one field named by two `--input-env`
 * is refused, as `--input` given twice is: one of them would win without a word. Whether the capability
 * has such a field is checked once it is loaded (inputEnvProblem), and only then is a variable not
 * set (or empty) refused, naming it and never printing a value (`unsetEnv`).
 */
export function applyInputEnv(parsed: ParsedInput, pairs: string[], env: Record<string, string | undefined>): ParsedInput {
  if (!parsed.ok || pairs.length === 0) return parsed;
  const base = parsed.value === undefined ? {} : parsed.value;
  const refused = (message: string): ParsedInput => ({ ok: false, message, suggestion: INPUT_ENV_SUGGESTION });
  if (base === null || typeof base !== "object" || Array.isArray(base)) return refused("--input-env fills fields of an object input, but --input is not a JSON object.");
  const input: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  let unsetEnv: string | undefined;
  for (const [at, pair] of pairs.entries()) {
    const match = INPUT_ENV.exec(pair);
    if (!match) return refused(`--input-env takes field=VARIABLE, like --input-env token=GITHUB_TOKEN, got ${JSON.stringify(pair.slice(0, 80))}.`);
    const [, field, variable] = match as unknown as [string, string, string];
    // The same field, or a field and one inside it (auth and auth.token): one would win, by the
    // flags' order. The same pair given twice is the same field twice too (MCP/CLI tester,
    // session 48: it was taken, and its note said twice).
    const twice = pairs.find((other, index) => {
      const named = other.slice(0, Math.max(0, other.indexOf("=")));
      return index !== at && (named === field || named.startsWith(`${field}.`) || field.startsWith(`${named}.`));
    });
    if (twice !== undefined) {
      const named = twice.slice(0, twice.indexOf("="));
      const what = named === field ? `both give ${field}; give it once` : `give ${field} and ${named}, one inside the other; give one of them`;
      return refused(`--input-env ${field}=${variable} and --input-env ${twice} ${what}.`);
    }
    const path = field.split(".");
    if (path.some((segment) => segment === "" || FORBIDDEN.has(segment))) return refused(`--input-env ${field}=${variable}: ${JSON.stringify(field)} is not a field path; give names joined by dots, like auth.token.`);
    const value = env[variable];
    // In a CI job a secret the job was not given is an empty string, not an unset variable: a
    // step run with it would run without the credential it believed it passed.
    const unset =
      value === undefined
        ? `--input-env ${field}=${variable}: the environment variable ${variable} is not set; set it, or give ${field} another way.`
        : value.trim() === ""
          ? `--input-env ${field}=${variable}: the environment variable ${variable} is set but ${value === "" ? "empty" : "blank"} (in a CI job, a secret the job was not given reads as empty); set it, or give ${field} another way.`
          : null;
    if (unset !== null) {
      unsetEnv ??= unset;
      continue;
    }
    let into = input;
    for (const segment of path.slice(0, -1)) {
      const next = Object.hasOwn(into, segment) ? into[segment] : undefined;
      if (next !== undefined && (next === null || typeof next !== "object" || Array.isArray(next))) {
        return refused(`--input-env ${field}=${variable}: the input's ${segment} is not an object, so it has no field ${JSON.stringify(path.at(-1))}.`);
      }
      // A copy, so that --input's own object is never changed.
      into = into[segment] = { ...((next as Record<string, unknown> | undefined) ?? {}) };
    }
    into[path.at(-1)!] = value;
  }
  return { ok: true, value: input, fromEnv: pairs.map((pair) => pair.slice(0, pair.indexOf("="))), ...(unsetEnv === undefined ? {} : { unsetEnv }) };
}

/** Names that would reach an object's prototype, never a field. */
const FORBIDDEN = new Set(["__proto__", "prototype", "constructor"]);

/**
 * Why an `--input-env` field is not one the capability's input declares (its JSON Schema), or
 * null: a value sent to a field the schema does not have is dropped by the check, silently, and a
 * CI step would run without the secret it believed it passed. A schema that says nothing of its
 * properties (a record, `any`) takes any field.
 */
export function inputEnvProblem(field: string, schema: unknown): string | null {
  // The schemas the value at this depth may have to match: more than one under a union or a nullable.
  let at = schemaBranches(schema, schema);
  const path = field.split(".");
  for (let i = 0; i < path.length; i++) {
    const objects = at.map((branch) => branch.properties).filter((properties): properties is Record<string, unknown> => properties !== null && typeof properties === "object");
    // A branch that says nothing of its properties (a record, `any`) takes any field.
    if (objects.length === 0 || at.some((branch) => branch.properties === undefined && (branch.type === undefined || branch.type === "object"))) return null;
    const holding = objects.filter((properties) => Object.hasOwn(properties, path[i]!));
    if (holding.length === 0) {
      const where = i === 0 ? "the input" : `the input's ${path.slice(0, i).join(".")}`;
      const known = [...new Set(objects.flatMap((properties) => Object.keys(properties)))];
      return `--input-env ${field}: ${where} has no field ${JSON.stringify(path[i])}${nearestField(path[i]!, known)}; its fields are ${known.length > 0 ? known.join(", ") : "none"}.`;
    }
    at = holding.flatMap((properties) => schemaBranches(properties[path[i]!], schema));
  }
  // The variable's text is what the field gets: a field that takes no text is told how to give it.
  const types = [...new Set(at.flatMap((branch) => (branch.type === undefined ? ["string"] : Array.isArray(branch.type) ? branch.type : [branch.type])))].map(String);
  if (at.length > 0 && !types.includes("string")) {
    return `--input-env ${field}: the input's ${field} takes ${types.join(" or ")}, and --input-env gives a field the variable's text; give ${field} in --input instead (--input '{"${path.at(-1)}": …}').`;
  }
  return null;
}

/** True when the input, checked by its schema, still holds `field` (a dotted path); false when it fails the check or drops it. */
export function keptByCheck(schema: v.GenericSchema, input: unknown, field: string): boolean {
  let checked: ReturnType<typeof v.safeParse>;
  try {
    checked = v.safeParse(schema, input);
  } catch {
    // A schema whose own check throws keeps nothing the run could rely on.
    return false;
  }
  if (!checked.success) return false;
  let at: unknown = checked.output;
  for (const segment of field.split(".")) {
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, segment)) return false;
    at = (at as Record<string, unknown>)[segment];
  }
  return true;
}

// What docket may say about a value a handler threw. A client learns its class only ("TypeError",
// "Error ENOENT", "a string (not an Error)"); the message, cause and stack go to the process's log under
// the failure's correlation id (docs/security.md). Both functions are total: a thrown Proxy, an
// object whose getters or toString throw, or a revoked Proxy never make them throw.
import * as dns from "node:dns";
import { constants } from "node:os";
import { withoutImportQueries } from "../capability/import-query.ts";

/**
 * A class name shown: identifier-shaped and named as error classes are (`TypeError`, `UpstreamError`,
 * `DOMException`). Any other `name` or constructor name (`ghp_16C7…`, `hunter2Token`) may be text
 * a file set, and is not shown.
 */
const CLASS_NAME = /^[A-Za-z_$][\w$]{0,58}(?:Error|Exception)$/;
/**
 * A code shown: a system error's (`ENOENT`, `ECONNREFUSED`, os.constants.errno), a name lookup's
 * (`ENOTFOUND`, `EAI_AGAIN`), or Node's and
 * undici's own (`ERR_INVALID_ARG_TYPE`, `UND_ERR_CONNECT_TIMEOUT`): words of capital letters
 * (`ERR_HTTP2_…`, `ERR_INVALID_UTF8`, `ERR_V8BREAKITERATOR` aside) joined by `_`. Any other
 * (`AKIAIOSFODNN7EXAMPLE`, `ERR_AKIAIOSFODNN7EXAMPLE`: a key behind the prefix) may be a value a
 * file set, and is not shown.
 */
const SYSTEM_CODES = new Set([
  ...Object.keys(constants.errno),
  // A name lookup's (fetch of a host that does not resolve): node:dns's codes, and getaddrinfo's.
  ...(Object.values(dns) as unknown[]).filter((value): value is string => typeof value === "string" && /^E[A-Z]+$/.test(value)),
  ...["ADDRFAMILY", "AGAIN", "BADFLAGS", "BADHINTS", "CANCELED", "FAIL", "FAMILY", "MEMORY", "NODATA", "NONAME", "OVERFLOW", "PROTOCOL", "SERVICE", "SOCKTYPE"].map((name) => `EAI_${name}`),
]);
const CODE_WORD = String.raw`(?:[A-Z]{1,20}|HTTP2|UTF8|V8BREAKITERATOR|V8|IPV4|IPV6)`;
const NAMED_CODE = new RegExp(String.raw`^(?:ERR|UND_ERR)(?:_${CODE_WORD}){1,8}$`);
const MAX_DETAIL = 16 * 1024;

/** Reads a property without running into a throwing getter or Proxy trap. */
function read(value: object, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function isError(value: unknown): value is Error {
  try {
    return value instanceof Error || Object.prototype.toString.call(value) === "[object Error]";
  } catch {
    return false;
  }
}

const DOCKET_WORDS = Symbol.for("docket.inDocketWords");

/**
 * Marks an error docket itself throws into a capability's code (a guard's refusal, a module it
 * cannot serve): its message is docket's, holding nothing of the file's, so a load error shows it
 * whole where what a file throws is shown by its class.
 */
export function inDocketWords<T extends Error>(error: T): T {
  Object.defineProperty(error, DOCKET_WORDS, { value: true });
  return error;
}

/** Whether `error` was marked by {@link inDocketWords}. */
export function isInDocketWords(error: unknown): boolean {
  try {
    return (error as { [DOCKET_WORDS]?: unknown } | null)?.[DOCKET_WORDS] === true;
  } catch {
    return false;
  }
}

/**
 * Said after the class of what a capability file's top level threw, in its load error: what the
 * value said may hold a secret (a URL with its password, a path), so only the process's own log
 * prints it (docs/security.md).
 */
export const UNSAID = " (what it said is not shown to clients, as it may hold a secret: docket serve's log, or a docket run of the file, prints it)";

/**
 * The class of a thrown value, safe to show any client: an identifier-shaped name (the error's
 * `name`, or its constructor's for a subclass that kept "Error"), followed by a system error code
 * like ENOENT when it has one. Never any text the value carries beyond those two shapes.
 */
export function thrownClass(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return notAnError("a string");
    case "undefined":
      return "undefined";
    case "function":
      // A function's name is no error class: `throw function evil() {}` read "threw a evil".
      return notAnError("a function");
    case "object":
      break;
    default:
      return notAnError(`a ${typeof value}`);
  }
  const error = isError(value);
  const name = read(value as object, "name");
  let ctor: unknown;
  try {
    ctor = read(read(value as object, "constructor") as object, "name");
  } catch {
    ctor = undefined;
  }
  const shaped = (candidate: unknown) => (typeof candidate === "string" && CLASS_NAME.test(candidate) ? candidate : null);
  let label = shaped(name) !== null && name !== "Error" ? (name as string) : (shaped(ctor) ?? (error ? "Error" : null));
  const code = read(value as object, "code");
  const coded = typeof code === "string" && (SYSTEM_CODES.has(code) || NAMED_CODE.test(code)) ? code : null;
  if (label === null || (!error && label === "Object")) {
    if (!error) return notAnError(coded === null ? "an object" : `an object with code ${coded}`);
    label = "Error";
  }
  return coded === null ? label : `${label} ${coded}`;
}

/**
 * How a thrown value that is no Error is named, read after "threw" ("its handler threw a string
 * (not an Error)"): what was thrown, and why it has no class to show.
 */
function notAnError(what: string): string {
  return `${what} (not an Error)`;
}

/** The thrown value's own message (or the value as text), for the process's log only. Total. */
export function thrownMessage(value: unknown): string {
  if (value !== null && (typeof value === "object" || typeof value === "function")) {
    const message = read(value, "message");
    if (typeof message === "string") return message;
  }
  return describe(value);
}

/**
 * Everything known about a thrown value, for the process's log only: its stack (or name and
 * message), then its causes. Bounded, and total like {@link thrownClass}. `mask` (the task's
 * secrets, docs/security.md) runs before the cut, so that the cut never leaves half a secret.
 */
export function thrownDetail(value: unknown, mask: (text: string) => string = (text) => text): string {
  const parts: string[] = [];
  let current: unknown = value;
  for (let depth = 0; depth < 4 && (depth === 0 || current !== undefined); depth++) {
    parts.push((depth === 0 ? "" : "caused by: ") + describe(current));
    current = current !== null && typeof current === "object" ? read(current, "cause") : undefined;
  }
  const text = mask(parts.join("\n"));
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text;
}

function describe(value: unknown): string {
  if (typeof value === "string") return `(a thrown string) ${value}`;
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return `(a thrown ${value === null ? "null" : typeof value}) ${String(value)}`;
  const stack = read(value, "stack");
  // The query a capability's modules are imported by (capability/pinned-sources.ts) is docket's, not the user's to read.
  if (typeof stack === "string" && stack !== "") return withoutImportQueries(stack);
  const message = read(value, "message");
  if (typeof message === "string") return `${thrownClass(value)}: ${message}`;
  try {
    const json = JSON.stringify(value);
    // Cut far past MAX_DETAIL (where thrownDetail cuts, after masking): no half secret is left at this cut.
    if (json !== undefined) return `${thrownClass(value)} ${json.slice(0, 4 * MAX_DETAIL)}`;
  } catch {
    // A cycle, a BigInt, a throwing getter or Proxy trap: the class is all there is.
  }
  try {
    return `${thrownClass(value)} ${String(value)}`;
  } catch {
    return `${thrownClass(value)} (cannot be written as text)`;
  }
}

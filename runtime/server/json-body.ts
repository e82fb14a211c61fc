import type { Context } from "hono";
import type { AppEnv } from "./_app-env.ts";
import { edgeFailure } from "./errors.ts";
import { readRequestBody } from "./request-bodies.ts";
import { isBlankJson, jsonErrorPosition, jsonParseReason } from "../execution/json-position.ts";

/** A parsed body, or the refusal already shaped as a response. */
export type BodyResult = { ok: true; value: unknown } | { ok: false; response: Response };

const refuse = (response: Response): BodyResult => ({ ok: false, response });

/** The refusal of a body whose client closed the connection before all of it came. */
export const INCOMPLETE_BODY = {
  status: 400,
  message: "The request body ended before all of it arrived (the connection closed before its Content-Length, or its last chunk, was sent), or its chunked encoding was malformed.",
  suggestion: "Send the whole body in one request.",
  context: { reason: "incomplete_body" },
} as const;

/**
 * True when a request's `Content-Encoding` leaves its body as sent: no header, or `identity`.
 * docket decodes no content coding (gzip, br, deflate…): such a body is refused with 415 before a
 * byte of it is read, never mistaken for malformed UTF-8 or JSON.
 */
export function isIdentityCoding(header: string | null | undefined): boolean {
  if (header === null || header === undefined) return true;
  return header.split(",").every((coding) => {
    const name = coding.trim().toLowerCase();
    return name === "" || name === "identity";
  });
}

// Stateless for whole-buffer decodes, so one serves every request.
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a JSON request body: only `application/json` sent uncompressed (415 otherwise), at most
 * `limit` bytes (413, checked on Content-Length and again while reading, since a sender may lie
 * or stream), under request_bytes_in_flight (503), malformed JSON → 400 naming the parse problem.
 * An absent body is `{}`.
 */
export async function readJsonBody(c: Context<AppEnv>, limit: number): Promise<BodyResult> {
  const coding = c.req.header("content-encoding");
  if (!isIdentityCoding(coding)) {
    return refuse(
      edgeFailure(c, {
        status: 415,
        message: `The request body is sent with Content-Encoding ${JSON.stringify(coding!.slice(0, 64))}, which docket does not decode.`,
        suggestion: "Send the body uncompressed: without a Content-Encoding header (or with Content-Encoding: identity).",
        context: { reason: "unsupported_content_encoding", content_encoding: coding!.slice(0, 64) },
        // RFC 9110 §15.5.16: a 415 for a content coding says which codings would have been taken.
        headers: { "Accept-Encoding": "identity" },
      }),
    );
  }
  const declared = c.req.header("content-length");
  const tooLarge = (bytes: number | null) =>
    refuse(
      edgeFailure(c, {
        status: 413,
        message: bytes === null ? `The request body is over the input limit of ${limit} bytes.` : `The request body is ${bytes} bytes, over the input limit of ${limit} bytes.`,
        suggestion: "Send a smaller input, or raise the limit with --input-bytes / DOCKET_INPUT_BYTES.",
        context: { reason: "too_large", limit, ...(bytes === null ? {} : { bytes }) },
      }),
    );
  if (declared !== undefined && Number(declared) > limit) return tooLarge(Number(declared));
  const sized = declared !== undefined && /^\d+$/.test(declared);
  const type = c.req.header("content-type");
  if (sized ? Number(declared) === 0 : !c.req.raw.body) {
    if (type === undefined || isJson(type)) return { ok: true, value: {} };
  }
  const charset = type === undefined || !isJsonEssence(type) ? null : foreignCharset(type);
  if (charset !== null) {
    return refuse(
      edgeFailure(c, {
        status: 415,
        message: foreignCharsetMessage(charset),
        suggestion: "Send the body encoded as UTF-8, with Content-Type: application/json (charset=utf-8, or no charset).",
        context: { reason: "unsupported_media_type", charset: charset.slice(0, 40) },
      }),
    );
  }
  if (type === undefined || !isJson(type)) {
    return refuse(
      edgeFailure(c, {
        status: 415,
        message: `The request body must be JSON (Content-Type: application/json), got ${JSON.stringify(type ?? "no Content-Type")}.`,
        context: { reason: "unsupported_media_type" },
      }),
    );
  }
  // Read under request_bytes_in_flight, and counted as it comes (a sender may lie or stream).
  const read = await readRequestBody(c, limit);
  if (!read.ok) {
    // The client closed the connection before the whole body came: nobody reads this answer, and
    // it is not a server fault to log (errors.ts logs only those).
    if (read.reason === "incomplete") return refuse(edgeFailure(c, INCOMPLETE_BODY));
    if (read.reason === "busy") return refuse(read.response);
    return tooLarge(null);
  }
  const bytes = read.bytes;
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return refuse(edgeFailure(c, { status: 400, message: "The request body is not valid UTF-8.", context: { reason: "malformed_json" } }));
  }
  if (isBlankJson(text)) return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    // The parser quotes the token it stumbled on, which may be a secret: its kind and where it is are enough.
    const at = jsonErrorPosition(text);
    return refuse(
      edgeFailure(c, {
        status: 400,
        message: `The request body is not valid JSON: ${jsonParseReason(error)}${at === null ? "" : ` at line ${at.line}, column ${at.column}`}. Check quotes, commas and brackets.`,
        context: at === null ? { reason: "malformed_json" } : { reason: "malformed_json", line: at.line, column: at.column },
      }),
    );
  }
}

/** True for `application/json` and `application/*+json` whose charset, if named, is UTF-8 (see foreignCharset). */
export function isJson(contentType: string): boolean {
  return isJsonEssence(contentType) && foreignCharset(contentType) === null;
}

function isJsonEssence(contentType: string): boolean {
  const essence = contentType.split(";")[0]!.trim().toLowerCase();
  return essence === "application/json" || (essence.startsWith("application/") && essence.endsWith("+json"));
}

/**
 * The charset a Content-Type names when it is not UTF-8 (`application/json; charset=latin1`), or
 * null (UTF-8, US-ASCII, or none named). JSON is UTF-8 (RFC 8259): such a body would be read as UTF-8 all the same, its text
 * changed or refused as invalid without a word of why. Parameters are read as RFC 9110 writes
 * them: a `;` or `charset=` inside a quoted value is part of that value.
 */
export function foreignCharset(contentType: string | undefined): string | null {
  if (contentType === undefined) return null;
  const parameter = /;\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/g;
  for (const match of contentType.matchAll(parameter)) {
    if (match[1]!.toLowerCase() !== "charset") continue;
    const raw = match[2]!.trim();
    const charset = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, "$1") : raw;
    // US-ASCII is a part of UTF-8: its bytes read the same.
    if (!/^(?:utf-?8|us-ascii)$/i.test(charset)) return charset;
  }
  return null;
}

/** What a refusal of a body in a charset other than UTF-8 says, on /api/v1 and /mcp alike. */
export function foreignCharsetMessage(charset: string): string {
  return `The request body must be JSON in UTF-8, but its Content-Type says charset=${JSON.stringify(charset.slice(0, 40))}: send it encoded as UTF-8.`;
}

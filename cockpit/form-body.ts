import type { Context } from "hono";
import { isIdentityCoding } from "../runtime/server/json-body.ts";
import { readRequestBody } from "../runtime/server/request-bodies.ts";

/** A submitted form, or why it could not be read: a status and sentence, or (request_bytes_in_flight) the answer itself. */
export type FormBody = { ok: true; form: URLSearchParams } | { ok: false; status: 400 | 413 | 415; message: string } | { ok: false; response: Response };

/**
 * Reads a form post (`application/x-www-form-urlencoded`, or `multipart/form-data` without files)
 * of at most `limit` bytes: the cockpit's forms hold an input, so the input limit bounds them.
 */
export async function readFormBody(c: Context, limit: number): Promise<FormBody> {
  const type = (c.req.header("content-type") ?? "").toLowerCase();
  const declared = Number(c.req.header("content-length") ?? "0");
  const tooLarge = { ok: false as const, status: 413 as const, message: `The form is larger than ${limit} bytes (the input limit).` };
  if (declared > limit) return tooLarge;
  // docket decodes no content coding: a compressed form would be read as garbled fields.
  const coding = c.req.header("content-encoding");
  if (!isIdentityCoding(coding)) return { ok: false, status: 415, message: `The form is sent with Content-Encoding ${JSON.stringify(coding!.slice(0, 64))}, which docket does not decode: post it uncompressed.` };
  const urlencoded = type.startsWith("application/x-www-form-urlencoded");
  if (!urlencoded && !type.startsWith("multipart/form-data")) {
    return { ok: false, status: 415, message: `A cockpit form is posted as application/x-www-form-urlencoded, got ${JSON.stringify(type.slice(0, 80) || "no content type")}.` };
  }
  // Under request_bytes_in_flight, as every route reads a body (its share goes back once read, before the form's action runs).
  const read = await readRequestBody(c, limit);
  if (!read.ok) {
    if (read.reason === "busy") return { ok: false, response: read.response };
    if (read.reason === "incomplete") return { ok: false, status: 400, message: "The form ended before all of it arrived (the connection closed)." };
    return tooLarge;
  }
  const bytes = read.bytes;
  if (urlencoded) return { ok: true, form: new URLSearchParams(new TextDecoder().decode(bytes)) };
  let data: FormData;
  try {
    data = await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { "content-type": c.req.header("content-type") ?? "" } }).formData();
  } catch {
    return { ok: false, status: 400, message: "The form could not be read: its multipart body is malformed (a missing or wrong boundary)." };
  }
  const form = new URLSearchParams();
  for (const [name, value] of data.entries()) if (typeof value === "string") form.append(name, value);
  return { ok: true, form };
}

import type { Context } from "hono";

/** Answers a rendered page: the doctype, then the markup hono/jsx escaped as it built it. */
export function htmlPage(c: Context, page: unknown, status = 200): Response {
  return c.html(`<!doctype html>\n${String(page)}`, status as 200);
}

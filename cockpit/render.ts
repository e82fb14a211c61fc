import type { Context } from "hono";

/** A rendered page as its document's text: the doctype, then the markup hono/jsx escaped as it built it. */
export function pageHtml(page: unknown): string {
  return `<!doctype html>\n${String(page)}`;
}

/** Answers a rendered page. */
export function htmlPage(c: Context, page: unknown, status = 200): Response {
  return c.html(pageHtml(page), status as 200);
}

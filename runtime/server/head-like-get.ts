import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./_app-env.ts";

/**
 * HEAD answers the headers GET would, `Content-Length` included, with no body (RFC 9110 §9.3.2).
 * Hono answers a HEAD by running the GET route and dropping the body it made; both runtimes then
 * counted the body they were given, none, and said `Content-Length: 0`. The body is measured
 * here, before it is dropped. A response that states its length already (an artifact download)
 * is left as it is, so nothing is read for it; so is an event stream, which never ends.
 */
export function headLikeGet(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.req.method !== "HEAD" || c.res.body === null || c.res.headers.has("content-length")) return;
    // A stream that has no end (MCP's server-sent events) has no length to give: it is let go.
    if (/^text\/event-stream\b/i.test(c.res.headers.get("content-type") ?? "")) {
      await c.res.body.cancel().catch(() => undefined);
      return;
    }
    const bytes = (await c.res.arrayBuffer()).byteLength;
    const headers = new Headers(c.res.headers);
    headers.set("Content-Length", String(bytes));
    c.res = new Response(null, { status: c.res.status, statusText: c.res.statusText, headers });
  };
}

import type { MiddlewareHandler } from "hono";

/**
 * The cockpit's Content-Security-Policy (README.md): scripts, styles and connections to this origin
 * only (`connect-src 'self'` covers the same-origin ws: URL in CSP Level 3 browsers), images from
 * here or `data:`, never framed. No inline script or style attribute is ever needed.
 */
export const COCKPIT_CSP = "default-src 'self'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Sets the CSP and its companions on every cockpit response, pages and assets alike. */
export function securityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const set = (name: string, value: string) => {
      try {
        c.res.headers.set(name, value);
      } catch {
        // A response with immutable headers: copy it once, then stamp it.
        c.res = new Response(c.res.body, c.res);
        c.res.headers.set(name, value);
      }
    };
    set("Content-Security-Policy", COCKPIT_CSP);
    set("X-Content-Type-Options", "nosniff");
    set("Referrer-Policy", "same-origin");
    set("X-Frame-Options", "DENY");
    // Pages are snapshots of live state: never served from a cache. Assets set their own.
    if (!c.res.headers.has("Cache-Control")) set("Cache-Control", "no-store");
  };
}

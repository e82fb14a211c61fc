import { isIP } from "node:net";
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv, ServerConfig } from "./_app-env.ts";
import { edgeFailure } from "./errors.ts";
import { edgeIdSource } from "./edge-ids.ts";
import { cockpitSession, cockpitTokenNeeded, OTHER_PAGE, wantsPage } from "./cockpit-session.ts";
import { sameSecret } from "./same-secret.ts";
import { isOwnOrigin, ownPageOrigin } from "./own-origin.ts";

export { isOwnOrigin, sameSecret };

/** The subprotocol prefix that carries the token on a WebSocket (browsers cannot set Authorization there). */
export const TOKEN_SUBPROTOCOL_PREFIX = "docket.token.";

/** The subprotocol the live channel speaks: the one a server ever answers (never a token one). */
export const LIVE_SUBPROTOCOL = "docket.v1";

/**
 * The subprotocols a WebSocket handshake offers (`Sec-WebSocket-Protocol`, comma-separated). Both
 * runtimes answer the first offered unless told otherwise, which echoed a `docket.token.<token>`
 * offered first back in the response: the adapters answer LIVE_SUBPROTOCOL, and /events refuses
 * an offer without it (app.ts).
 */
export function offeredSubprotocols(header: string | undefined | null): string[] {
  return (header ?? "").split(",").map((p) => p.trim()).filter((p) => p !== "");
}

/** The path that answers without a token: liveness only, no checkout details. */
const OPEN_PATHS = new Set(["/healthz"]);

/**
 * Request and trace ids on every request: `X-Request-Id` is taken when it has a safe shape and
 * echoed on every response, including errors; a valid W3C `traceparent` gives the trace id.
 */
export function requestIdentity(): MiddlewareHandler<AppEnv> {
  const ids = edgeIdSource();
  return async (c, next) => {
    const request_id = ids.requestId(c.req.header("x-request-id"));
    const trace_id = ids.traceId(c.req.header("traceparent"));
    c.set("ids", { request_id, trace_id });
    // What the edge established, never what a request claims: the cockpit's own routes act as
    // the cockpit (cockpit/actions.tsx); a header any HTTP client can set claims nothing.
    c.set("actor", { kind: "http" });
    await next();
    try {
      c.res.headers.set("X-Request-Id", request_id);
    } catch {
      // Some responses (fetched, redirects) carry immutable headers: copy once to stamp the id.
      c.res = new Response(c.res.body, c.res);
      c.res.headers.set("X-Request-Id", request_id);
    }
  };
}

/** True for an IP literal, `localhost`, or an operator-configured name; a port may follow. */
export function isAllowedHost(hostHeader: string | undefined, allowedHosts: readonly string[]): boolean {
  if (!hostHeader) return false;
  const bracketed = /^\[([0-9A-Fa-f:.]+)\](?::(\d{1,5}))?$/.exec(hostHeader);
  if (bracketed) return isIP(bracketed[1]!) === 6 && isPort(bracketed[2]);
  const plain = /^([^:\s]+)(?::(\d{1,5}))?$/.exec(hostHeader);
  if (!plain || !isPort(plain[2])) return false;
  const name = plain[1]!.toLowerCase();
  return isIP(name) === 4 || name === "localhost" || allowedHosts.some((h) => h.toLowerCase() === name);
}

/** An absent port, or one a URL can hold (a Host of `x:99999` would make the request URL invalid). */
function isPort(port: string | undefined): boolean {
  return port === undefined || Number(port) <= 65535;
}

/**
 * The tokens a request presents: Bearer header, or on `/events` also `?token=` or the
 * `docket.token.` subprotocol. The cockpit's cookie is no token (cockpit-session.ts).
 */
export function presentedTokens(c: Context<AppEnv>, isLiveChannel: boolean): string[] {
  const tokens: string[] = [];
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
  if (bearer) tokens.push(bearer[1]!);
  if (isLiveChannel) {
    // Each one given: two `token=` are two tokens, refused as such, never the first one taken.
    for (const query of c.req.queries("token") ?? []) if (query) tokens.push(query);
    for (const p of offeredSubprotocols(c.req.header("sec-websocket-protocol"))) {
      if (p.startsWith(TOKEN_SUBPROTOCOL_PREFIX)) tokens.push(p.slice(TOKEN_SUBPROTOCOL_PREFIX.length));
    }
  }
  return tokens;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** True for a browser loading a page: `Sec-Fetch-Mode: navigate`, or without fetch metadata an Accept naming HTML. */
function isPageLoad(c: Context<AppEnv>): boolean {
  const mode = c.req.header("sec-fetch-mode");
  return mode === undefined ? wantsPage(c) : mode.toLowerCase() === "navigate";
}

/**
 * Host (DNS rebinding) on every route → 403; a page loaded by another name of this machine
 * (`localhost`) → 307 to the server's own origin; a foreign `Origin` on state-changing routes and
 * the live channel → 403 (an absent Origin is a non-browser client and allowed); the token, when
 * one is configured, on every route but `/healthz` → 401.
 */
export function accessGuard(config: ServerConfig): MiddlewareHandler<AppEnv> {
  // The last Host header found allowed: a client sends the same one on every request, and the
  // check (two patterns, an IP parse) need not run again for it. The config does not change.
  let allowedHost: string | undefined;
  const session = cockpitSession(config);
  return async (c, next) => {
    const path = c.req.path;
    const host = c.req.header("host");
    if (host === undefined || host !== allowedHost) {
      if (!isAllowedHost(host, config.allowedHosts)) {
        return edgeFailure(c, {
          status: 403,
          message: `Host ${JSON.stringify((host ?? "").slice(0, 100))} is not served here: use an IP address or localhost.`,
          suggestion: "Start the server with --allow-host <name> if it is meant to answer to that name.",
          context: { reason: "host_not_allowed" },
        });
      }
      allowedHost = host;
    }
    if ((c.req.method === "GET" || c.req.method === "HEAD") && isPageLoad(c)) {
      const ownOrigin = ownPageOrigin(host!, config);
      if (ownOrigin !== null) {
        const url = new URL(c.req.url);
        return c.redirect(`${ownOrigin}${url.pathname}${url.search}`, 307);
      }
    }
    const isLiveChannel = path === "/events";
    const origin = c.req.header("origin");
    if (origin !== undefined && (isLiveChannel || !SAFE_METHODS.has(c.req.method)) && !isOwnOrigin(origin, config)) {
      return edgeFailure(c, {
        status: 403,
        message: `Requests from origin ${JSON.stringify(origin.slice(0, 100))} are refused: only pages of ${config.origin} may change state or open the live channel.`,
        context: { reason: "origin_not_allowed" },
      });
    }
    const cockpit = path === "/cockpit" || path.startsWith("/cockpit/");
    if (config.token !== null && c.req.method === "GET" && cockpit && c.req.query("token") !== undefined) {
      return session.signIn(c, config.token);
    }
    if (config.token !== null && !OPEN_PATHS.has(path)) {
      const tokens = presentedTokens(c, isLiveChannel);
      const signedIn = tokens.length === 0 ? session.check(c) : "absent";
      // Every token sent must be the server's: one request offering several (subprotocols are a
      // list) would otherwise try them all. A token sent decides alone: the session cookie may be
      // stale (a browser keeps an earlier run's), and is only read when no token is sent.
      const right = tokens.some((t) => sameSecret(t, config.token!));
      const allRight = right && tokens.every((t) => sameSecret(t, config.token!));
      if (!allRight && signedIn !== "valid") {
        // A page with no token, or only a stale cookie (a server restarted since the sign-in).
        if (cockpit && tokens.length === 0) return cockpitTokenNeeded(c, signedIn === "other_page" ? OTHER_PAGE : undefined);
        return edgeFailure(c, {
          status: 401,
          message:
            signedIn === "other_page"
              ? OTHER_PAGE
              : tokens.length === 0
                ? (c.req.header("authorization") ?? "").trim() !== ""
                  ? "The Authorization header holds no token docket can read: send it once, as Bearer and the token (two Authorization headers arrive as one, joined by a comma)."
                  : "This server requires a token: send Authorization: Bearer <token>."
                : right
                  ? "More than one token was sent, and not all are this server's token: send one."
                  : "The token sent is not this server's token.",
          suggestion: "The token was printed when the server started and is in .docket/lease.json of the checkout.",
          context: { reason: "unauthorized" },
          headers: { "WWW-Authenticate": 'Bearer realm="docket"' },
        });
      }
    }
    await next();
  };
}

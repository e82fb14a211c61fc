import { getCookie, setCookie } from "hono/cookie";
import { randomBytes } from "node:crypto";
import type { Context } from "hono";
import type { AppEnv, ServerConfig } from "./_app-env.ts";
import { edgeFailure } from "./errors.ts";
import { sameSecret } from "./same-secret.ts";

/** What a request's session cookie says: none, one of an earlier server, one sent by another page of this site, or this server's. */
export type SessionCheck = "absent" | "stale" | "other_page" | "valid";

/**
 * How a browser stays signed in to the cockpit of a server with a token (docs/security.md#the-cockpits-cookie).
 * A page cannot send `Authorization`, so `/cockpit?token=…` gives the browser a cookie instead.
 * The cookie never holds the token: a browser sends a host's cookies to every port of that host,
 * so another server there reads it. It holds a value made when this server started, which opens
 * this server alone and only until it stops. Its name carries the port, so two servers of one
 * host each keep their own.
 */
export interface CockpitSession {
  /** The cookie's name, `docket_session_<port>`. */
  cookieName(): string;
  /** Reads the request's cookie. */
  check(c: Context<AppEnv>): SessionCheck;
  /** `GET /cockpit…?token=<t>`: the cookie and a redirect to the page without the token, or 401. */
  signIn(c: Context<AppEnv>, token: string): Response;
}

/**
 * The values of `Sec-Fetch-Site` a cookie is honoured with: the server's own pages, and a page the
 * user opened (address bar, bookmark, a link from outside the browser). `same-site` is the one
 * SameSite=Strict lets through from another port of this host; such a page may not use the cookie.
 */
const OWN_PAGE_SITES = new Set(["same-origin", "none"]);

/** The session of one server's run; `config.port` is read when asked (it is known once bound). */
export function cockpitSession(config: Pick<ServerConfig, "port">): CockpitSession {
  const value = randomBytes(32).toString("base64url");
  const cookieName = () => `docket_session_${config.port}`;
  return {
    cookieName,
    check(c) {
      const sent = getCookie(c, cookieName());
      if (sent === undefined || sent === "") return "absent";
      if (!sameSecret(sent, value)) return "stale";
      // Browsers send Sec-Fetch-Site to loopback and https addresses; where it is absent (plain
      // http to another address) nothing tells another port's page apart (docs/security.md).
      const site = c.req.header("sec-fetch-site");
      return site === undefined || OWN_PAGE_SITES.has(site.toLowerCase()) ? "valid" : "other_page";
    },
    signIn(c, token) {
      const given = c.req.query("token") ?? "";
      if (!sameSecret(given, token)) {
        if (wantsPage(c)) return cockpitTokenNeeded(c, "The token in this link is not this server's token (a link of an earlier server?).");
        return edgeFailure(c, {
          status: 401,
          message: "The token in this link is not this server's token.",
          suggestion: "Open the link the server printed when it started; the token is also in .docket/lease.json of the checkout.",
          context: { reason: "unauthorized" },
        });
      }
      const url = new URL(c.req.url);
      url.searchParams.delete("token");
      // No Max-Age: the value dies with the server's run anyway, and the browser's session with it.
      setCookie(c, cookieName(), value, { httpOnly: true, sameSite: "Strict", path: "/" });
      // Without the token in its address, the page leaves no trace of it in history.
      return c.redirect(`${url.pathname}${url.search}`, 303);
    },
  };
}

/** What a browser opening the cockpit of a server with a token, without it, is told: the link that signs it in. */
const COCKPIT_TOKEN_NEEDED = {
  message: "The cockpit of this server needs its token: open /cockpit?token=<token> once, and the browser keeps a session cookie for every page after.",
  suggestion: "docket serve printed that link when it started (with a token it made); the token is also in .docket/lease.json of the checkout.",
};

/** What a page of another origin of this site (another port of this host) is told when it sends the cockpit's cookie. */
export const OTHER_PAGE =
  "The cockpit's cookie is honoured only on requests of its own pages or opened from the address bar, and this one came from a page of another origin of this site (another port of this host, Sec-Fetch-Site: same-site).";

/** True when the client reads pages (a browser): its Accept names HTML. */
export function wantsPage(c: Context<AppEnv>): boolean {
  return /\btext\/html\b/i.test(c.req.header("accept") ?? "");
}

/** 401 for a cockpit page asked without a session: a page a person reads in a browser, JSON for anything else. */
export function cockpitTokenNeeded(c: Context<AppEnv>, first?: string): Response {
  const headers = { "WWW-Authenticate": 'Bearer realm="docket"' };
  if (wantsPage(c)) {
    const page = `<!doctype html><meta charset="utf-8"><title>docket — token needed</title><h1>This server needs its token</h1>${first ? `<p>${first}</p>` : ""}<p>${COCKPIT_TOKEN_NEEDED.message.replace("<token>", "&lt;token&gt;")}</p><p>${COCKPIT_TOKEN_NEEDED.suggestion}</p>`;
    return new Response(page, { status: 401, headers: { ...headers, "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" } });
  }
  const message = first ? `${first} ${COCKPIT_TOKEN_NEEDED.message}` : COCKPIT_TOKEN_NEEDED.message;
  return edgeFailure(c, { status: 401, ...COCKPIT_TOKEN_NEEDED, message, context: { reason: "unauthorized" }, headers });
}

import { Hono } from "hono";
import type { ExecutionPlane } from "../execution/plane.ts";
import { DOCKET_VERSION } from "../version.ts";
import type { AppEnv, ServerConfig } from "./_app-env.ts";
import { accessGuard, LIVE_SUBPROTOCOL, offeredSubprotocols, requestIdentity, TOKEN_SUBPROTOCOL_PREFIX } from "./guards.ts";
import { apiRoutes, API_PREFIX, onlyGet } from "./api-routes.ts";
import { largeAnswers, type LargeAnswers } from "./large-answers.ts";
import { requestBodies, requestBodyBudget, type RequestBodies } from "./request-bodies.ts";
import { edgeFailure, errorHandler, notFoundHandler } from "./errors.ts";
import { openApiDocument } from "./openapi.ts";
import type { LiveChannel } from "./live-channel.ts";
import { healthz } from "./healthz.ts";
import { headLikeGet } from "./head-like-get.ts";

/** Sub-apps mounted by other layers; until one is given its path answers a plain 404 descriptor. */
export interface AppMounts {
  cockpit?: Hono<any>;
  mcp?: Hono<any>;
}

/** What the app is built from. */
export interface AppOptions {
  plane: ExecutionPlane;
  live: LiveChannel;
  config: ServerConfig;
  mounts?: AppMounts;
  /** The budget of large answers (large-answers.ts), shared with the direct POST route; a fresh one by default. */
  answers?: LargeAnswers;
  /** The budget of request bodies being read (request-bodies.ts), shared with the direct POST route; a fresh one by default. */
  bodies?: RequestBodies;
  /** Where stacks of unexpected errors go (stderr); never a client. */
  log?: (line: string) => void;
}

/**
 * The runtime-agnostic Hono app of `docket serve`: guards, the API projected from the registry,
 * the OpenAPI document, the live channel's checks (the adapter performs the upgrade), and the
 * mount points of the cockpit and MCP.
 */
export function createApp(options: AppOptions): Hono<AppEnv> {
  const { plane, live, config } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const app = new Hono<AppEnv>();
  // First, so that every answer to a HEAD — refusals included — says the length GET's body has.
  app.use("*", headLikeGet());
  app.use("*", requestIdentity());
  app.use("*", accessGuard(config));
  // After the access guard: a request refused for its host, origin or token is never read.
  app.use("*", requestBodyBudget(options.bodies ?? requestBodies(plane.limits.request_bytes_in_flight)));

  app.get("/healthz", (c) => {
    const { status, body } = healthz(plane.store, plane.workerFault?.() ?? null);
    return c.json(body, status);
  });
  app.get(`${API_PREFIX}/openapi.json`, (c) => c.json(openApiDocument(plane, { token: config.token !== null, origin: config.origin })));
  // What `docket run` asks before reporting: does this server serve my checkout? Behind the token.
  app.get(`${API_PREFIX}/plane`, (c) => c.json({ root: plane.root, pid: process.pid, version: DOCKET_VERSION }));
  // Paths answered by GET alone: any other method is told so (405), not that nothing is there.
  for (const path of ["/healthz", `${API_PREFIX}/openapi.json`, `${API_PREFIX}/plane`]) app.all(path, (c) => onlyGet(c, path));
  app.route(API_PREFIX, apiRoutes(plane, options.answers ?? largeAnswers(plane.limits.answer_bytes_in_flight)));

  app.get("/events", async (c) => {
    const upgrade = (c.req.header("upgrade") ?? "").toLowerCase() === "websocket";
    const verdict = live.check(new URL(c.req.url).searchParams, upgrade);
    if (!verdict.ok) return edgeFailure(c, { status: verdict.status, error_code: verdict.error_code, message: verdict.message, suggestion: verdict.suggestion, context: verdict.context, headers: verdict.headers });
    const protocols = c.req.header("sec-websocket-protocol");
    const offered = offeredSubprotocols(protocols);
    // RFC 6455 §4.1: the header, when sent, names one subprotocol or more. One naming none (", ,")
    // was upgraded with the header echoed back empty, which strict clients refuse (API tester, session 41).
    if (upgrade && protocols !== undefined && offered.length === 0) {
      return edgeFailure(c, {
        status: 400,
        message: `The WebSocket handshake is malformed: Sec-WebSocket-Protocol names no subprotocol (${JSON.stringify(protocols.slice(0, 64))}).`,
        suggestion: `Offer ["${LIVE_SUBPROTOCOL}"], or leave the header out.`,
        context: { reason: "bad_handshake" },
      });
    }
    if (upgrade && offered.length > 0 && !offered.includes(LIVE_SUBPROTOCOL)) {
      return edgeFailure(c, {
        status: 400,
        message: `The live channel speaks the WebSocket subprotocol "${LIVE_SUBPROTOCOL}", which this handshake does not offer.`,
        suggestion: `Offer ["${LIVE_SUBPROTOCOL}"] (with "${TOKEN_SUBPROTOCOL_PREFIX}<token>" beside it when the server has a token), or no subprotocol at all.`,
        context: { reason: "subprotocol", offered: offered.filter((p) => !p.startsWith(TOKEN_SUBPROTOCOL_PREFIX)) },
      });
    }
    // RFC 6455 §4.1: an opening handshake says Connection: Upgrade (a token of a list); the runtime
    // would upgrade one that does not, which no WebSocket client sends (contract tester, session 39).
    const connection = (c.req.header("connection") ?? "").toLowerCase().split(",").map((token) => token.trim());
    if (upgrade && !connection.includes("upgrade")) {
      return edgeFailure(c, {
        status: 400,
        message: "The WebSocket handshake is malformed: it asks to upgrade to websocket without Connection: Upgrade (RFC 6455 §4.1).",
        suggestion: "Connect with a WebSocket client (every current browser and library sends both headers), or send Connection: Upgrade with Upgrade: websocket.",
        context: { reason: "bad_handshake" },
      });
    }
    // RFC 6455 §4.4: a version this server does not speak is told the one it does, with a descriptor like any refusal.
    const version = c.req.header("sec-websocket-version");
    if (upgrade && version !== "13") {
      return edgeFailure(c, {
        status: 426,
        message: `The live channel speaks WebSocket version 13 (RFC 6455), and this handshake asks for ${version === undefined ? "no version" : `version ${JSON.stringify(version.slice(0, 16))}`}.`,
        suggestion: "Connect with a WebSocket client of RFC 6455 (every current browser and library is one): it sends Sec-WebSocket-Version: 13.",
        context: { reason: "websocket_version" },
        headers: { "Sec-WebSocket-Version": "13" },
      });
    }
    const open = c.env?.docketUpgrade;
    if (!open) return edgeFailure(c, { status: 501, error_code: "unavailable", message: "This server was started without a WebSocket adapter, so the live channel is off.", context: { reason: "no_websocket" } });
    try {
      return await open(c, verdict.target);
    } catch {
      // The runtime refused the handshake itself (a malformed Sec-WebSocket-Key, say): the client's fault.
      return edgeFailure(c, { status: 400, message: "The WebSocket handshake is malformed (RFC 6455 §4.1).", context: { reason: "bad_handshake" } });
    }
  });

  app.all("/events", (c) => onlyGet(c, "/events"));

  mount(app, "/cockpit", options.mounts?.cockpit, "The cockpit is not part of this server build.");
  mount(app, "/mcp", options.mounts?.mcp, "MCP over HTTP is not part of this server build; use `docket mcp` (stdio).");
  app.get("/", (c) => c.redirect("/cockpit"));

  app.onError(errorHandler(log));
  app.notFound(notFoundHandler);
  return app;
}

function mount(app: Hono<AppEnv>, path: string, sub: Hono<any> | undefined, absent: string): void {
  if (sub) {
    app.route(path, sub);
    return;
  }
  const missing = (c: Parameters<typeof notFoundHandler>[0]) => edgeFailure(c, { status: 404, error_code: "not_found", message: absent, context: { path } });
  app.all(path, missing);
  app.all(`${path}/*`, missing);
}

import { buildFailure } from "../execution/failure.ts";
import { newTraceId, requestIdFrom } from "./edge-ids.ts";
import type { Hono } from "hono";
// hono/bun is marked deprecated for an @hono/bun package that is not published yet; this file
// is the only one that imports it, so the swap is one line.
import { websocket } from "hono/bun";
import type { Server, ServerWebSocket, WebSocketHandler } from "bun";
import type { AppEnv, LiveUpgrade } from "./_app-env.ts";
import type { LiveChannel } from "./live-channel.ts";
import { CLIENT_MESSAGE_BYTES, type LiveSocket } from "./live-socket.ts";
import { listenUrl, type ListenOptions, type RunningServer } from "./_listen.ts";
import { API_PREFIX } from "./api-routes.ts";
import { LIVE_SUBPROTOCOL, offeredSubprotocols } from "./guards.ts";
import type { CapabilityPostEnv } from "./capability-post.ts";

/** Bun's listen options: `capabilityPost` (capability-post.ts) serves capability calls by POST. */
export interface BunListenOptions extends ListenOptions {
  capabilityPost?: (request: Request, env: CapabilityPostEnv) => Promise<Response>;
}

// Bun drops (send → 0) past this many buffered bytes; the live channel stops writing at the first
// backpressure (-1) anyway, so this only bounds a replay or a closing frame sent into a full socket.
const BACKPRESSURE_LIMIT = 64 * 1024 * 1024;

/**
 * Maps Bun's ServerWebSocket onto LiveSocket. Hono's WSContext.send discards Bun's return value,
 * so the raw socket is used: `sendText` → bytes written, -1 backpressure (buffered; wait for
 * `drain`), 0 dropped.
 */
function bunSocket(raw: ServerWebSocket<unknown>): LiveSocket {
  return {
    send(text) {
      const status = raw.sendText(text);
      return status > 0 ? "ok" : status === -1 ? "backpressure" : "dropped";
    },
    bufferedAmount: () => raw.getBufferedAmount(),
    ping: () => void raw.ping(),
    answersPings: true,
    cork: (fn) => void raw.cork(fn),
    subscribe: (topic) => raw.subscribe(topic),
    unsubscribe: (topic) => raw.unsubscribe(topic),
    close: (code, reason) => raw.close(code, reason),
  };
}

/**
 * Serves the app with `Bun.serve` and `hono/bun` (what the compiled binary uses). Hono's Bun
 * websocket handler has no `drain` and gives `onClose` a new WSContext, so live sockets are keyed
 * by `ws.raw` and Bun's `drain` is added here.
 */
export function serveWithBun(app: Hono<AppEnv>, live: LiveChannel, options: BunListenOptions): RunningServer {
  const sockets = new WeakMap<object, LiveSocket>();
  const upgrade: LiveUpgrade = (c, target) => {
    const events = {
      onOpen(_event: Event, ws: { raw?: unknown }) {
        const raw = ws.raw as ServerWebSocket<unknown>;
        const socket = bunSocket(raw);
        sockets.set(raw, socket);
        live.open(socket, target);
      },
      onClose(_event: Event, ws: { raw?: unknown }) {
        const socket = sockets.get(ws.raw as object);
        if (socket) live.close(socket);
      },
    };
    // Made here rather than by Hono's upgradeWebSocket, which lets Bun answer the first
    // subprotocol offered: a `docket.token.<token>` offered first was echoed back in the answer.
    // The data is what hono/bun's `websocket` handler reads (events, url, protocol).
    const speaks = offeredSubprotocols(c.req.header("sec-websocket-protocol")).includes(LIVE_SUBPROTOCOL);
    const server = (c.env as { server: Server<unknown> }).server;
    const data = { events, url: new URL(c.req.url), protocol: speaks ? LIVE_SUBPROTOCOL : "" };
    // The 101 carries the request's id like every other answer (API tester, session 43).
    const headers: Record<string, string> = { "X-Request-Id": c.get("ids").request_id, ...(speaks ? { "Sec-WebSocket-Protocol": LIVE_SUBPROTOCOL } : {}) };
    if (!server.upgrade(c.req.raw, { data, headers })) {
      throw new Error("Bun refused the WebSocket handshake.");
    }
    return new Response(null);
  };
  const handler = {
    ...websocket,
    drain(ws: ServerWebSocket<unknown>) {
      const socket = sockets.get(ws);
      if (socket) live.drain(socket);
    },
    // Bun answers a client's ping itself; the channel counts them (LiveChannel.ping).
    ping(ws: ServerWebSocket<unknown>) {
      const socket = sockets.get(ws);
      if (socket) live.ping(socket);
    },
    pong(ws: ServerWebSocket<unknown>) {
      const socket = sockets.get(ws);
      if (socket) live.pong(socket);
    },
    backpressureLimit: BACKPRESSURE_LIMIT,
    closeOnBackpressureLimit: false,
    maxPayloadLength: CLIENT_MESSAGE_BYTES,
  } as unknown as WebSocketHandler<unknown>;
  // A direct call lifts the idle timer for its own request: its deadline bounds it (long-request.ts).
  const fetch = (request: Request, bunServer: Server<unknown>) => app.fetch(request, { server: bunServer, docketUpgrade: upgrade, docketKeepOpen: (long: Request) => bunServer.timeout(long, 0) });
  const post = options.capabilityPost;
  const server = Bun.serve({
    hostname: options.host,
    port: options.port,
    ...(options.idleTimeoutSeconds === undefined ? {} : { idleTimeout: options.idleTimeoutSeconds }),
    // Capability calls by POST skip Hono's per-request work when every guard admits them as they
    // stand; the route hands anything else to the app (capability-post.ts).
    ...(post ? { routes: { [`${API_PREFIX}/*`]: { POST: (request: Request, bunServer: Server<unknown>) => post(request, { app: (again) => fetch(again, bunServer), keepOpen: (long) => bunServer.timeout(long, 0) }) } } } : {}),
    fetch,
    websocket: handler,
    // Never Bun's development error page (it shows stacks, source lines and paths): whatever
    // escapes the app is a bare 500 whose details stay on stderr.
    development: false,
    // A port another process listens on is refused (EADDRINUSE), never shared: with
    // `development: false`, Bun 1.4 otherwise binds with SO_REUSEPORT and a second server — of
    // another checkout, say — took some of the first one's connections.
    reusePort: false,
    // Bun refuses a body over this itself (128 MiB by default), with a bare 413: the limit that
    // counts is input_bytes (up to 1 GiB), which the app checks from Content-Length before reading
    // and again while reading, and refuses with its own descriptor (json-body.ts). Nothing is
    // buffered for a declared length: a body is read only by a handler that asks for it, and
    // request_bytes_in_flight bounds the bodies read at once (request-bodies.ts).
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    error: (error) => {
      const request_id = requestIdFrom(undefined);
      const failure = buildFailure({ error_code: "internal", stage: "run", message: "The server failed while answering this request.", request_id, trace_id: newTraceId() });
      const line = `[docket] ${failure.correlation_id} unhandled server error: ${error?.stack ?? String(error)}`;
      if (options.log) options.log(line);
      else process.stderr.write(`${line}\n`);
      return new Response(JSON.stringify({ error: failure }), { status: 500, headers: { "content-type": "application/json", "x-request-id": request_id } });
    },
  });
  // Many watchers of the same thing get one publish per event instead of a send each.
  live.useTopics({ publish: (topic, text) => void server.publish(topic, text) });
  const port = server.port!;
  return {
    // The address bound, never the name asked for (`localhost`): it is the server's own origin
    // (docs/security.md#the-servers-own-address). Bun has `address` but does not type it.
    url: listenUrl((server as { address?: { address?: string } }).address?.address ?? options.host, port),
    port,
    stop: async () => {
      await server.stop(true);
    },
  };
}

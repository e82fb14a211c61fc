import type { IncomingMessage, Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { Hono } from "hono";
import { serve } from "@hono/node-server";
import { WebSocketServer, type WebSocket } from "ws";
import type { AppEnv } from "./_app-env.ts";
import type { LiveChannel } from "./live-channel.ts";
import type { LiveTarget } from "./live-target.ts";
import { answerUpgrade } from "./_node-upgrade.ts";
import { CLIENT_MESSAGE_BYTES, type LiveSocket } from "./live-socket.ts";
import { listenUrl, type ListenOptions, type RunningServer } from "./_listen.ts";
import { LIVE_SUBPROTOCOL } from "./guards.ts";

// `ws` buffers without bound and has no backpressure return value: past this many bytes buffered
// in the process (the kernel took no more) a send reports backpressure, and the write callback of
// that frame is the drain signal. Bun reports backpressure at the first byte it must buffer; a
// little more room here keeps the two close without a write callback on every frame.
const HIGH_WATER_BYTES = 256 * 1024;

/** What `ws` exposes beyond its types: the net.Socket under it, for corking writes. */
type WithSocket = WebSocket & { _socket?: { cork?: () => void; uncork?: () => void } };

/** Maps a `ws` socket onto LiveSocket. */
function nodeSocket(raw: WebSocket, onDrain: () => void): LiveSocket {
  let waiting = false;
  const flushed = () => {
    waiting = false;
    onDrain();
  };
  return {
    send(text) {
      if (raw.readyState !== raw.OPEN) return "dropped";
      // The frame that crosses the mark carries the callback: once it is written, all before it is too.
      const full = raw.bufferedAmount + text.length > HIGH_WATER_BYTES;
      if (full && !waiting) {
        waiting = true;
        raw.send(text, flushed);
      } else raw.send(text);
      return full ? "backpressure" : "ok";
    },
    bufferedAmount: () => raw.bufferedAmount,
    ping: () => {
      if (raw.readyState === raw.OPEN) raw.ping();
    },
    answersPings: true,
    cork(fn) {
      // net.Socket cork/uncork turns the frames written in between into one writev.
      const socket = (raw as WithSocket)._socket;
      socket?.cork?.();
      try {
        fn();
      } finally {
        socket?.uncork?.();
      }
    },
    close: (code, reason) => raw.close(code, reason),
  };
}

/** Seconds a request's head may take, as Bun's default idle timeout. */
const DEFAULT_HEAD_SECONDS = 10;

/**
 * Serves the app on Node with `@hono/node-server` v2, and the live channel with a `ws`
 * WebSocketServer in noServer mode, fed by the server's own `upgrade` listener (_node-upgrade.ts).
 * Resolves once listening.
 */
export function serveWithNode(app: Hono<AppEnv>, live: LiveChannel, options: ListenOptions): Promise<RunningServer> {
  // `ws` answers the first subprotocol offered unless told: never a token one (guards.ts).
  const wss = new WebSocketServer({ noServer: true, maxPayload: CLIENT_MESSAGE_BYTES, handleProtocols: (offered) => (offered.has(LIVE_SUBPROTOCOL) ? LIVE_SUBPROTOCOL : false) });
  const opened = (raw: WebSocket, target: LiveTarget) => {
    const socket: LiveSocket = nodeSocket(raw, () => live.drain(socket));
    raw.on("pong", () => live.pong(socket));
    // `ws` answers a client's ping itself; the channel counts them (LiveChannel.ping).
    raw.on("ping", () => live.ping(socket));
    raw.once("close", () => live.close(socket));
    // A client's fault (a message past maxPayload, a malformed frame): `ws` closes the socket
    // itself (1009, 1002) and says why here, which without a listener would end the server.
    raw.on("error", () => {});
    live.open(socket, target);
  };
  // The sockets of requests answered on the upgrade path, until each closes.
  const upgrading = new Set<Duplex>();
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch: (request) => app.fetch(request, {}),
        hostname: options.host,
        port: options.port,
        // Node's own 60 s would hold a socket whose request head stopped half-way; its check of
        // every connection runs each second (default 30 s) so the bound is kept to about a second.
        serverOptions: { headersTimeout: (options.idleTimeoutSeconds ?? DEFAULT_HEAD_SECONDS) * 1000, connectionsCheckingInterval: 1000 },
      },
      (info: AddressInfo) => {
        resolve({
          // The address bound, never the name asked for (`localhost`): the server's own origin (docs/security.md#the-servers-own-address).
          url: listenUrl(info.address, info.port),
          port: info.port,
          stop: () =>
            new Promise<void>((done) => {
              for (const client of wss.clients) client.terminate();
              // Requests on the upgrade path are no connections Node's server tracks any more.
              for (const socket of upgrading) socket.destroy();
              const http = server as Server;
              http.close(() => done());
              http.closeAllConnections?.();
            }),
        });
      },
    ) as Server;
    server.on("upgrade", (incoming: IncomingMessage, socket: Duplex, head: Buffer) => void answerUpgrade(app, wss, incoming, socket, head, opened, upgrading));
    server.once("error", reject);
  });
}

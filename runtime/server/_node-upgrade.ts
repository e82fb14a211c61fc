import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Hono } from "hono";
import type { WebSocket, WebSocketServer } from "ws";
import type { AppEnv, LiveUpgrade } from "./_app-env.ts";
import type { LiveTarget } from "./live-target.ts";

/** RFC 6455 §4.1: the key is 16 random bytes in base64 (what `ws` itself requires). */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;

/** Response headers the upgrade path writes itself, or that do not belong on a closing answer. */
const HOP_HEADERS = new Set(["connection", "content-length", "keep-alive", "transfer-encoding", "upgrade"]);

/**
 * Answers one request Node handed to the server's `upgrade` listener — every request carrying an
 * `Upgrade` header, whatever it asks, is one — through the app, as the Bun adapter does:
 *
 * - when the app upgraded it (`GET /events` with every check passed), `ws` completes the
 *   handshake with the request's id in the 101 and `opened` gets the socket;
 * - otherwise the app's whole answer is written, status, headers and body, and the connection
 *   closed. `@hono/node-server`'s own listener wrote refusals with no body, let `ws` answer a bad
 *   key or method in its own words without the request's id, and saw every such request as a
 *   GET (serve tester, session 46).
 */
export async function answerUpgrade(
  app: Hono<AppEnv>,
  wss: WebSocketServer,
  incoming: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  opened: (ws: WebSocket, target: LiveTarget) => void,
): Promise<void> {
  // A client gone mid-answer is no fault of the server's.
  socket.on("error", () => {});
  let accepted: { target: LiveTarget; requestId: string } | null = null;
  const upgrade: LiveUpgrade = (c, target) => {
    const key = c.req.header("sec-websocket-key");
    // Refused here as Bun refuses it in `server.upgrade`: the app answers 400 bad_handshake.
    if (key === undefined || !WEBSOCKET_KEY.test(key)) throw new Error("The Sec-WebSocket-Key is missing or malformed.");
    accepted = { target, requestId: c.get("ids").request_id };
    return new Response(null, { status: 101 });
  };
  const request = requestOf(incoming, socket, head);
  const response = request === null ? null : await Promise.resolve(app.fetch(request, { docketUpgrade: upgrade })).catch(() => null);
  if (socket.destroyed) return;
  const upgraded = accepted as { target: LiveTarget; requestId: string } | null;
  if (upgraded !== null && response?.status === 101) {
    const withId = (headers: string[]) => headers.push(`X-Request-Id: ${upgraded.requestId}`);
    wss.on("headers", withId);
    try {
      wss.handleUpgrade(incoming, socket, head, (ws) => opened(ws, upgraded.target));
    } finally {
      wss.off("headers", withId);
    }
    return;
  }
  // A request target or Host Node took that no URL can be made of: refused as node-server refuses it.
  const answer = response ?? new Response(null, { status: 400 });
  const body = incoming.method === "HEAD" ? Buffer.alloc(0) : Buffer.from(await answer.arrayBuffer());
  if (socket.destroyed) return;
  const lines = [`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ""}`, "Connection: close"];
  // A HEAD's length is the one its GET would have (the app's headLikeGet says it).
  const length = incoming.method === "HEAD" ? answer.headers.get("content-length") : String(body.length);
  if (length !== null) lines.push(`Content-Length: ${length}`);
  answer.headers.forEach((value: string, name: string) => {
    if (!HOP_HEADERS.has(name)) lines.push(`${name}: ${value}`);
  });
  socket.end(Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), body]));
}

/**
 * The fetch Request for a Node request head, with its real method and every header line as sent
 * (a repeated Host stays two values, which the access guard refuses), and its body when it
 * declares a Content-Length: the bytes after the head, read from the socket only as the app reads
 * them. A chunked body offered with an Upgrade header (no client sends one) is not decoded here:
 * the app reads it as a body that ended early (400).
 */
function requestOf(incoming: IncomingMessage, socket: Duplex, head: Buffer): Request | null {
  try {
    const target = incoming.url ?? "/";
    // Joined, not resolved: a target of `//other/path` is a path here, as in any origin-form request.
    const url = target.startsWith("/") ? new URL(`http://${incoming.headers.host ?? "localhost"}${target}`) : new URL(target);
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
    const headers = new Headers();
    const raw = incoming.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
    const method = incoming.method ?? "GET";
    const length = Number(incoming.headers["content-length"] ?? 0);
    const chunked = incoming.headers["transfer-encoding"] !== undefined;
    const body = method === "GET" || method === "HEAD" || (!chunked && !(length > 0)) ? null : bodyFrom(socket, head, chunked ? 0 : length, chunked);
    return new Request(url, { method, headers, body, ...(body === null ? {} : { duplex: "half" }) } as RequestInit);
  } catch {
    return null;
  }
}

/** `length` bytes of a request body: what came with the head, then the socket's, pulled as read. */
function bodyFrom(socket: Duplex, head: Buffer, length: number, unreadable: boolean): ReadableStream<Uint8Array> {
  let left = length;
  let first = true;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (unreadable) return controller.error(new Error("A chunked body on an upgrade request is not read."));
      if (first) {
        first = false;
        const part = head.subarray(0, left);
        left -= part.length;
        if (part.length > 0) controller.enqueue(new Uint8Array(part));
        if (left === 0) return controller.close();
      }
      return new Promise<void>((resolve) => {
        const stop = () => (socket.off("data", onData), socket.off("close", onClose), socket.pause());
        const onData = (chunk: Buffer) => {
          const part = chunk.subarray(0, left);
          left -= part.length;
          stop();
          controller.enqueue(new Uint8Array(part));
          if (left === 0) controller.close();
          resolve();
        };
        const onClose = () => (stop(), controller.error(new Error("The client closed the connection before its body ended.")), resolve());
        socket.on("data", onData);
        socket.once("close", onClose);
        socket.resume();
      });
    },
  });
}

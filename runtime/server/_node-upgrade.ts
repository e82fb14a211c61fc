import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Hono } from "hono";
import type { WebSocket, WebSocketServer } from "ws";
import type { AppEnv, LiveUpgrade } from "./_app-env.ts";
import { LIVE_SUBPROTOCOL, offeredSubprotocols } from "./guards.ts";
import type { LiveTarget } from "./live-target.ts";
import { chunkedDecoder, MalformedChunks } from "./_chunked-body.ts";

/** RFC 6455 §4.1: the key is 16 random bytes in base64 (what `ws` itself requires). */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;

/** Response headers the upgrade path writes itself, or that do not belong on a closing answer. */
const HOP_HEADERS = new Set(["connection", "content-length", "keep-alive", "transfer-encoding", "upgrade"]);

/**
 * How long a request on the upgrade path may go without a byte while its head or body is still
 * coming: Bun's idle timer for the same request (10 s). Node's own request timers do not follow a
 * socket handed to an `upgrade` listener, and a client that sent half a body and went silent held
 * it, and the server's stop, for as long as it stayed (checking tester, session 46).
 */
const BODY_IDLE_MS = 10_000;

/**
 * Answers one request Node handed to the server's `upgrade` listener — every request carrying an
 * `Upgrade` header, whatever it asks, is one — through the app, as the Bun adapter does:
 *
 * - when the app upgraded it (`GET /events` with every check passed), `ws` completes the
 *   handshake with the request's id in the 101 and `opened` gets the socket;
 * - otherwise the app's answer is written as it comes — status, headers, then the body a piece at
 *   a time as the client takes it — and the connection closed. `@hono/node-server`'s own listener
 *   wrote refusals with no body, let `ws` answer a bad key or method in its own words without the
 *   request's id, and saw every such request as a GET (serve tester, session 46).
 *
 * The request's signal aborts when the client goes (a direct call is then cancelled, as on the
 * ordinary path), and `sockets` holds the socket until it closes, so that the server's stop ends it.
 * Nothing here throws: a failure mid-answer ends that one connection.
 */
export async function answerUpgrade(
  app: Hono<AppEnv>,
  wss: WebSocketServer,
  incoming: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  opened: (ws: WebSocket, target: LiveTarget) => void,
  sockets: Set<Duplex>,
): Promise<void> {
  // A client gone mid-answer is no fault of the server's.
  socket.on("error", () => {});
  sockets.add(socket);
  const gone = new AbortController();
  socket.once("close", () => {
    sockets.delete(socket);
    gone.abort();
  });
  // A client that ends its side is gone too: nothing it sends after the request is read.
  socket.once("end", () => gone.abort());
  const idle = socket as Duplex & { setTimeout?: (ms: number, onTimeout?: () => void) => void };
  idle.setTimeout?.(BODY_IDLE_MS, () => socket.destroy());
  // Once the request is read whole, the socket is read on (and what comes dropped) so that its end
  // is seen: paused, a client's leaving went unnoticed and its direct call ran to its deadline.
  // Not for a WebSocket handshake, whose socket `ws` reads once it has answered.
  const readOn = () => {
    idle.setTimeout?.(0);
    if ((incoming.headers.upgrade ?? "").toLowerCase() === "websocket" || socket.destroyed) return;
    socket.on("data", () => {});
    socket.resume();
  };
  try {
    let accepted: { target: LiveTarget; requestId: string } | null = null;
    const upgrade: LiveUpgrade = (c, target) => {
      const key = c.req.header("sec-websocket-key");
      // Refused here as Bun refuses it in `server.upgrade`: the app answers 400 bad_handshake.
      if (key === undefined || !WEBSOCKET_KEY.test(key)) throw new Error("The Sec-WebSocket-Key is missing or malformed.");
      // A HEAD is no handshake (Bun's `server.upgrade` refuses it): let through, its 101 was read
      // as a body for its length, which threw, and a bare 400 went out (serve tester, session 48).
      if (c.req.method !== "GET") throw new Error("A WebSocket handshake is a GET.");
      accepted = { target, requestId: c.get("ids").request_id };
      return new Response(null, { status: 101 });
    };
    // `Expect: 100-continue` is answered as the body is first read, as Node's own path and Bun
    // answer it: the client (curl, for a body over 1 MB) otherwise waited a second before sending.
    // Repeated, the header arrives joined ("100-continue, 100-continue"): still a request for the 100.
    const expectations = (incoming.headers.expect ?? "").toLowerCase().split(",").map((item) => item.trim());
    const expectsContinue = expectations.every((item) => item === "100-continue");
    const goOn = () => {
      if (expectsContinue && !socket.destroyed) socket.write("HTTP/1.1 100 Continue\r\n\r\n");
    };
    const request = requestOf(incoming, socket, head, gone.signal, readOn, goOn);
    if (request.body === null) readOn();
    const response = request.ok ? await Promise.resolve(app.fetch(request.request, { docketUpgrade: upgrade })).catch(() => null) : null;
    if (socket.destroyed) return void response?.body?.cancel().catch(() => {});
    const upgraded = accepted as { target: LiveTarget; requestId: string } | null;
    if (upgraded !== null && response?.status === 101) {
      // The app took the offer as it reads it (a list with an empty item, a repeated name): the
      // one subprotocol answered is all `ws`, stricter, is given to read, as Bun answers it.
      if (incoming.headers["sec-websocket-protocol"] !== undefined) {
        if (offeredSubprotocols(incoming.headers["sec-websocket-protocol"]).includes(LIVE_SUBPROTOCOL)) incoming.headers["sec-websocket-protocol"] = LIVE_SUBPROTOCOL;
        else delete incoming.headers["sec-websocket-protocol"];
      }
      const withId = (headers: string[]) => headers.push(`X-Request-Id: ${upgraded.requestId}`);
      wss.on("headers", withId);
      try {
        wss.handleUpgrade(incoming, socket, head, (ws) => opened(ws, upgraded.target));
      } finally {
        wss.off("headers", withId);
      }
      return;
    }
    // A request target or Host that no URL can be made of: refused as node-server refuses it.
    await writeAnswer(socket, response ?? new Response(null, { status: 400 }), incoming.method === "HEAD");
  } catch {
    socket.destroy();
  }
}

/** How much of an answer of unknown length is read before its head is written: one that ends within it is sent with its length. */
const LENGTH_READ_AHEAD = 64 * 1024;

/**
 * Writes `answer` and closes the connection: the head, then the body a chunk at a time, waiting
 * for the socket to drain (an artifact of hundreds of megabytes is never held whole); a HEAD's
 * body is cancelled, never read. An answer of unknown length that ends within LENGTH_READ_AHEAD
 * (every JSON answer) is sent with its Content-Length; a longer one ends with the connection. A
 * body that fails mid-way (a file cut short) ends the connection.
 */
async function writeAnswer(socket: Duplex, answer: Response, head: boolean): Promise<void> {
  const lines = [`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ""}`, "Connection: close"];
  answer.headers.forEach((value: string, name: string) => {
    if (!HOP_HEADERS.has(name)) lines.push(`${name}: ${value}`);
  });
  const declared = answer.headers.get("content-length");
  const writeHead = (length: string | null) => socket.write(Buffer.from(`${[...lines, ...(length === null ? [] : [`Content-Length: ${length}`])].join("\r\n")}\r\n\r\n`, "latin1"));
  if (head || answer.body === null) {
    await answer.body?.cancel().catch(() => {});
    writeHead(declared ?? (head ? null : "0"));
    socket.end();
    return;
  }
  const reader = answer.body.getReader();
  const closed = new Promise<{ done: true; value: undefined }>((resolve) => socket.once("close", () => resolve({ done: true, value: undefined })));
  try {
    let ahead: Uint8Array[] = [];
    let aheadBytes = 0;
    let ended = false;
    if (declared === null) {
      while (aheadBytes < LENGTH_READ_AHEAD) {
        const { done, value } = await Promise.race([reader.read(), closed]);
        if (done) {
          ended = true;
          break;
        }
        ahead.push(value);
        aheadBytes += value.byteLength;
      }
    }
    if (socket.destroyed) return void (await reader.cancel().catch(() => {}));
    writeHead(declared ?? (ended ? String(aheadBytes) : null));
    for (const chunk of ahead) socket.write(chunk);
    ahead = [];
    while (!ended) {
      const { done, value } = await Promise.race([reader.read(), closed]);
      if (done || socket.destroyed) break;
      if (!socket.write(value)) await Promise.race([new Promise<void>((resolve) => socket.once("drain", resolve)), closed]);
    }
    if (socket.destroyed) await reader.cancel().catch(() => {});
    else socket.end();
  } catch {
    await reader.cancel().catch(() => {});
    socket.destroy();
  }
}

/**
 * The fetch Request for a Node request head, with its real method and every header line as sent
 * (a repeated Host stays two values, which the access guard refuses), the signal of its client,
 * and its body when it declares a Content-Length or is chunked (`curl --http2` streams one with
 * its `Upgrade: h2c`): the bytes after the head, read from the socket only as the app reads them.
 * A malformed chunked body reads as one that ended early (400).
 */
function requestOf(incoming: IncomingMessage, socket: Duplex, head: Buffer, signal: AbortSignal, bodyRead: () => void, firstRead: () => void): { ok: true; request: Request; body: ReadableStream | null } | { ok: false; body: null } {
  try {
    const target = incoming.url ?? "/";
    // Joined, not resolved: a target of `//other/path` is a path here, as in any origin-form request.
    const url = target.startsWith("/") ? new URL(`http://${incoming.headers.host ?? "localhost"}${target}`) : new URL(target);
    if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, body: null };
    const headers = new Headers();
    const raw = incoming.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
    const method = incoming.method ?? "GET";
    const length = Number(incoming.headers["content-length"] ?? 0);
    const coding = incoming.headers["transfer-encoding"];
    const chunked = coding !== undefined;
    // Chunked alone is read, as Bun reads it: `gzip, chunked` was taken as chunked, its gzip left undone.
    const body = method === "GET" || method === "HEAD" || (!chunked && !(length > 0)) ? null : bodyFrom(socket, head, chunked ? null : length, bodyRead, firstRead, chunked && coding.trim().toLowerCase() !== "chunked");
    const request = new Request(url, { method, headers, body, signal, ...(body === null ? {} : { duplex: "half" }) } as RequestInit);
    return { ok: true, request, body };
  } catch {
    return { ok: false, body: null };
  }
}

/**
 * A request body: `length` bytes, or a chunked one decoded (`length` null). What came with the
 * head first, then the socket's, pulled as read; `done` once whole, `firstRead` as it is first read.
 */
function bodyFrom(socket: Duplex, head: Buffer, length: number | null, done: () => void, firstRead: () => void, codingRefused = false): ReadableStream<Uint8Array> {
  let left = length ?? Number.POSITIVE_INFINITY;
  const chunks = length === null ? chunkedDecoder() : null;
  let first = true;
  /** Hands on what `bytes` hold of the body: whether it is whole now, and whether any of its bytes were handed on. */
  const take = (controller: ReadableStreamDefaultController<Uint8Array>, bytes: Buffer): { whole: boolean; handed: boolean } => {
    if (chunks !== null) {
      const decoded = chunks.push(bytes);
      let handed = false;
      for (const part of decoded.data) {
        if (part.length === 0) continue;
        controller.enqueue(new Uint8Array(part));
        handed = true;
      }
      return { whole: decoded.done, handed };
    }
    const part = bytes.subarray(0, left);
    left -= part.length;
    if (part.length > 0) controller.enqueue(new Uint8Array(part));
    return { whole: left === 0, handed: part.length > 0 };
  };
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      try {
        if (codingRefused) throw new MalformedChunks("A Transfer-Encoding other than chunked alone is not read.");
        if (first) {
          first = false;
          firstRead();
          const taken = take(controller, head);
          if (taken.whole) return (done(), controller.close());
          if (taken.handed) return;
        }
      } catch (error) {
        return controller.error(error);
      }
      return new Promise<void>((resolve) => {
        const stop = () => (socket.off("data", onData), socket.off("close", onClose), socket.off("end", onClose), socket.pause());
        // Read on until a byte of the body is handed on, or it ends: a piece of the socket holding
        // only a chunk's framing (its CRLF, a size line) handed nothing, and the stream, asked
        // nothing more, left the body unread until the idle timer ended the connection
        // (checking tester, session 48).
        const onData = (chunk: Buffer) => {
          try {
            const taken = take(controller, chunk);
            if (!taken.whole && !taken.handed) return;
            stop();
            if (taken.whole) (done(), controller.close());
          } catch (error) {
            stop();
            controller.error(error);
          }
          resolve();
        };
        const onClose = () => (stop(), controller.error(new Error("The client closed the connection before its body ended.")), resolve());
        socket.on("data", onData);
        socket.once("close", onClose);
        // A client that ends its side mid-body sends no more of it: refused now, as Bun and Node's
        // own parser refuse it, not held until the idle timer (round-2 checking tester, session 48).
        socket.once("end", onClose);
        socket.resume();
      });
    },
  });
}

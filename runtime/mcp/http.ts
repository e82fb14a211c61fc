import { randomUUID } from "node:crypto";
import { Hono, type Context } from "hono";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { ExecutionPlane } from "../execution/plane.ts";
import { createDocketMcpServer } from "./server.ts";
import { cancelledRequest, PendingRequests, reusedIdAnswer } from "./pending-requests.ts";
import { foreignCharset, foreignCharsetMessage, isIdentityCoding } from "../server/json-body.ts";
import { largestBody, readRequestBody } from "../server/request-bodies.ts";
import { checkMessage, idOf } from "./_message-check.ts";

/** Options of {@link createMcpApp}. */
export interface McpAppOptions {
  /** Sessions kept at once (`mcp_sessions`); past it the least recently used idle one is closed. Default the plane's limit. */
  maxSessions?: number;
  log?: (line: string) => void;
}

interface Session {
  server: Server;
  transport: WebStandardStreamableHTTPServerTransport;
  /** Its client's calls that have no answer yet: a session with one is never the one closed. */
  pending: PendingRequests;
  /** Per request still unanswered, the signal of the HTTP request that carried it (see callerLeft). */
  callers: Map<RequestId, AbortSignal>;
  /** The result its initialize was answered: what a later initialize on it is answered (a session is negotiated once). */
  negotiated: { result: Record<string, unknown> | null };
}

// Bun closes a connection that sent nothing for 10 s (Bun.serve's default idleTimeout); an SSE
// stream waiting on a long execution sends an SSE comment more often than that.
const KEEP_ALIVE_MS = 5_000;

/**
 * MCP Streamable HTTP at `/mcp` (mounted by `docket serve`; the app's guards apply first: Host,
 * Origin on POST, token), with the SDK's web-standard transport, so it runs under Bun and Node alike.
 *
 * Sessions, not the stateless mode: `notifications/cancelled` arrives on a request of its own and
 * must reach the server following the call it cancels, and the client's name (the actor of its
 * executions) is only said at initialize. A session is one SDK `Server` over the plane; bounded,
 * least recently used closed first, ended by the client's DELETE. Nothing of an execution lives in
 * a session: an agent that lost one reads its executions from the store like anyone else.
 */
export function createMcpApp(plane: ExecutionPlane, options: McpAppOptions = {}): Hono {
  const maxSessions = options.maxSessions ?? plane.limits.mcp_sessions;
  // Insertion order is use order: the first entry is the least recently used.
  const sessions = new Map<string, Session>();

  /**
   * Room for one more session: the least recently used idle ones are closed. A session whose
   * client waits for an answer (a `wait: true` start, say) is never closed under it — it lost its
   * call before. False when every session is busy.
   */
  const makeRoom = (): boolean => {
    for (const [id, session] of sessions) {
      if (sessions.size < maxSessions) break;
      if (session.pending.count > 0) continue;
      sessions.delete(id);
      void session.server.close();
    }
    return sessions.size < maxSessions;
  };

  /** A session for `request`, which carried `message` (null: none docket could read; the transport judges it). */
  const open = async (request: Request, message: JSONRPCMessage | null): Promise<Response> => {
    // Only an initialize becomes a session: a request that will not (a GET, a call without its
    // session) must not close another client's idle session to make room for nothing.
    if (isJSONRPCRequest(message) && message.method === "initialize" && !makeRoom()) {
      return Response.json(
        { jsonrpc: "2.0", id: null, error: { code: -32000, message: `All ${maxSessions} MCP sessions (mcp_sessions) are waiting for answers; try again shortly, or raise --mcp-sessions.` } },
        { status: 503, headers: { "Retry-After": "1" } },
      );
    }
    const callers = new Map<RequestId, AbortSignal>();
    const negotiated: Session["negotiated"] = { result: null };
    const initializeId = isJSONRPCRequest(message) && message.method === "initialize" ? message.id : null;
    const server = createDocketMcpServer(plane, { log: options.log, callerLeft: (id) => callers.get(id) });
    const pending = new PendingRequests();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { server, transport, pending, callers, negotiated });
      },
      keepAliveMs: KEEP_ALIVE_MS,
      maxRequestBodySize: largestBody(plane.limits.input_bytes),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    // The client's requests and their answers, as they pass: what makes a session busy.
    const received = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (!pending.received(message)) return;
      received?.(message, extra);
      // MCP: a cancelled request is not answered, so the event stream that waited for its answer
      // is ended here; the transport ends one only with its answer, and this one would stay open,
      // sending keep-alives, for as long as the session lives (one connection each: SDK clients
      // cancel at every request timeout).
      const cancelled = cancelledRequest(message);
      if (cancelled !== undefined) {
        callers.delete(cancelled);
        transport.closeSSEStream(cancelled);
      }
    };
    const send = transport.send.bind(transport);
    transport.send = async (message, sendOptions) => {
      if (negotiated.result === null && initializeId !== null && isJSONRPCResultResponse(message) && message.id === initializeId) negotiated.result = message.result;
      try {
        await send(message, sendOptions);
      } finally {
        // Answered, or its client is gone: either way nobody waits for it any more.
        pending.answered(message);
        if ("id" in message && message.id !== undefined && !("method" in message)) callers.delete(message.id);
      }
    };
    const response = await transport.handleRequest(request);
    // Not an initialize (the transport refused it): there is no session to keep.
    if (transport.sessionId === undefined) await server.close();
    return response;
  };

  const app = new Hono();
  app.all("/", async (c) => {
    // docket decodes no content coding: a compressed body would be read as malformed JSON (-32700).
    const coding = c.req.header("content-encoding");
    if (!isIdentityCoding(coding)) {
      const message = `The request body is sent with Content-Encoding ${JSON.stringify(coding!.slice(0, 64))}, which docket does not decode: send it uncompressed.`;
      return c.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message } }, 415, { "Accept-Encoding": "identity" });
    }
    // JSON is UTF-8: a body said to be in another charset would be read as UTF-8 all the same.
    const charset = foreignCharset(c.req.header("content-type"));
    if (charset !== null) {
      return c.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message: foreignCharsetMessage(charset) } }, 415);
    }
    const id = c.req.header("mcp-session-id");
    let request = c.req.raw;
    let carried: JSONRPCMessage | null = null;
    if (request.method === "POST") {
      // Read under request_bytes_in_flight: its share goes back before the call it carries runs.
      const read = await readPost(c, largestBody(plane.limits.input_bytes));
      if (read instanceof Response) return read;
      if ("status" in read) return c.json({ jsonrpc: "2.0", id: null, error: { code: -32000, message: read.message } }, read.status);
      request = read.request;
      // Checked as stdio checks a line, so both transports answer a malformed message alike
      // (the SDK's own check names nothing: "Invalid JSON-RPC message", or runs a batch).
      if (read.json !== undefined) {
        const checked = checkMessage(read.json, "request");
        if (!checked.ok) return c.json({ jsonrpc: "2.0", id: checked.id, error: { code: checked.code, message: checked.message } }, 400);
        carried = checked.message as JSONRPCMessage;
        if (id === undefined && (checked.message as { method?: unknown }).method !== "initialize") {
          return c.json({ jsonrpc: "2.0", id: idOf(read.json), error: { code: -32000, message: "Bad Request: this request has no Mcp-Session-Id header. Send the session id the answer to initialize gave (its Mcp-Session-Id header) with every later request, or initialize first." } }, 400);
        }
      }
    }
    if (id === undefined && (c.req.method === "GET" || c.req.method === "DELETE")) {
      return c.json({ jsonrpc: "2.0", id: null, error: { code: -32000, message: `Bad Request: a ${c.req.method} of /mcp needs the Mcp-Session-Id header: send the session id the answer to initialize gave.` } }, 400);
    }
    if (id === undefined) return open(request, carried);
    const session = sessions.get(id);
    // MCP: an unknown session is a 404, which tells the client to initialize a new one.
    if (!session) return c.json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found: it ended, or the server restarted. Initialize a new session." } }, 404);
    sessions.delete(id);
    sessions.set(id, session);
    // A client that drops its POST (or a forwarding docket mcp that dies) leaves its call: the
    // request's signal, or the answer stream it no longer reads, says so (docs/containment.md).
    const left = new AbortController();
    c.req.raw.signal.addEventListener("abort", () => left.abort(c.req.raw.signal.reason), { once: true });
    const asked = carried !== null && isJSONRPCRequest(carried) ? carried : null;
    // A session is negotiated once: a later initialize on it gets the first one's answer, as
    // docket mcp answers it on stdio (the transport refused it -32600 with id null).
    // JSON-RPC ids name one request each: the transport would send the waiting request's answer
    // down this one's stream, or run both and lose one answer. Nothing of it runs — an initialize
    // included, checked first: answered with the session's result, it was a second answer to the
    // id of a call still waiting (checking tester).
    if (asked !== null && session.pending.reused(asked as JSONRPCMessage)) return c.json(reusedIdAnswer(asked, session.pending), 400);
    if (asked !== null && asked.method === "initialize" && session.negotiated.result !== null) return c.json({ jsonrpc: "2.0", id: asked.id, result: session.negotiated.result });
    if (asked !== null) {
      // Waiting from now, not from when the transport reads it: a second request with its id sent
      // meanwhile is refused too.
      session.pending.received(asked);
      session.callers.set(asked.id, left.signal);
    }
    const response = await session.transport.handleRequest(request);
    // Refused by the transport before it ran (a header it does not take): no answer will come.
    if (asked !== null && response.status >= 400) session.pending.forget(asked.id);
    return openedAtOnce(response, () => left.abort(new Error("the client stopped reading the answer")));
  });
  return app;
}

/**
 * A POST's body, read once — with a declared length or without one (chunked), at most
 * `maxBytes` either way, under request_bytes_in_flight (its 503 answer as every route gives it)
 * — and the request again with that body, for the SDK's transport to read in turn; or why it
 * cannot be read. `json` is undefined when the body is not JSON: the transport then answers it
 * (-32700, or 406/415 for its headers) as it stands.
 */
async function readPost(c: Context, maxBytes: number): Promise<{ request: Request; json: unknown } | { status: 400 | 413; message: string } | Response> {
  const request = c.req.raw;
  const tooLarge = { status: 413, message: `Payload Too Large: the request body is over ${maxBytes} bytes, the most /mcp takes (the input_bytes limit and room for the message around it). Send a smaller input; for large data, pass the path of a file in the checkout instead.` } as const;
  const read = await readRequestBody(c, maxBytes);
  if (!read.ok) {
    if (read.reason === "busy") return read.response;
    if (read.reason === "incomplete") return { status: 400, message: "Bad Request: the request body ended before all of it arrived (the connection closed). Send the whole message in one request." };
    return tooLarge;
  }
  const bytes = read.bytes;
  let json: unknown;
  try {
    json = JSON.parse(UTF8.decode(bytes));
  } catch {
    json = undefined;
  }
  return { request: new Request(request.url, { method: request.method, headers: request.headers, body: bytes as Uint8Array<ArrayBuffer> }), json };
}

// Not fatal: a body that is not UTF-8 is decoded as the transport decodes it, then judged as JSON.
const UTF8 = new TextDecoder("utf-8");


const OPENING = new TextEncoder().encode(": open\n\n");

/**
 * An SSE answer (a call answered as an event stream) begins with a comment, so that its headers
 * go out at once: the runtime sends them with the first bytes of the body, and a client that
 * waits for them before its next message — `docket mcp` relaying an agent's messages in order —
 * waited for the whole call (a 3 s `wait: true` start held every other call of the agent).
 * `onCancel` is told when the client stops reading it before its end: it left.
 */
function openedAtOnce(response: Response, onCancel: () => void): Response {
  if (!response.body || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) return response;
  const reader = response.body.getReader();
  let opened = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!opened) {
        opened = true;
        controller.enqueue(OPENING);
        return;
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      onCancel();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

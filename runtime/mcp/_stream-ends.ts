import { isJSONRPCNotification, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";

/** Told when the answer stream of a POST that carried `ids` (the agent's requests) has ended, for any reason, every message it held handed on. */
export type StreamEnded = (ids: RequestId[], error: unknown) => void;

/** Sees the ends of the answer streams of the requests sent through its `fetch` (see {@link watchStreamEnds}). */
export interface StreamEndWatch {
  /** A `fetch` for the SDK's Streamable HTTP client transport. */
  fetch: typeof fetch;
  /**
   * Whether `message`, as the SDK hands it on, is the mark this watch put after the last bytes of
   * an answer stream: the transport's `onmessage` asks first, and never relays a mark. Seeing one
   * tells `ended` of its stream.
   */
  ends(message: JSONRPCMessage): boolean;
}

/** The method of the mark put after an answer stream's last bytes: a notification no server sends. */
const END_MARK = "notifications/docket/stream-ended";

/**
 * How long a stream's mark may take to come through the SDK before its end is told anyway (the
 * SDK stopped reading it: the transport closed). Parsing a large answer takes a while (a 7.5 MB
 * one, most of a second on a loaded machine); the mark normally comes right behind it.
 */
const MARK_PATIENCE_MS = 30_000;

/**
 * A `fetch` for the SDK's Streamable HTTP client transport that says when each request's answer
 * stream ends. The SDK reads an answer sent as an event stream in the background and, when that
 * stream ends or breaks before the answer came (the server stopped, crashed or restarted), drops
 * it without a word: the agent's request then waits forever, and `docket mcp` with it. With this
 * the bridge learns which requests the ended stream carried and answers those still waiting.
 *
 * The end is told in order with the stream's messages, not when its bytes end: a mark (a
 * notification of its own) is put after the last bytes, and the SDK hands it on after every
 * message before it — however long parsing them takes. Told when the bytes ended, after a fixed
 * grace, an answer of a few megabytes still being parsed was answered "the server stopped" and
 * then answered again (a tester's finding). An event cut short by a broken stream is closed first
 * as an event of another type, which the SDK skips.
 */
export function watchStreamEnds(ended: StreamEnded, base: typeof fetch = fetch): StreamEndWatch {
  const marked = new Map<number, { ids: RequestId[]; error: unknown; timer: ReturnType<typeof setTimeout> }>();
  let streams = 0;
  const tell = (stream: number) => {
    const entry = marked.get(stream);
    if (entry === undefined) return;
    marked.delete(stream);
    clearTimeout(entry.timer);
    ended(entry.ids, entry.error);
  };
  const watched = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const ids = requestIdsOf(init);
    const response = await base(input, init);
    if (ids.length === 0 || !response.body || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) return response;
    const reader = response.body.getReader();
    const stream = ++streams;
    let over = false;
    const finish = (controller: ReadableStreamDefaultController<Uint8Array>, error: unknown) => {
      over = true;
      const timer = setTimeout(() => tell(stream), MARK_PATIENCE_MS);
      timer.unref?.();
      marked.set(stream, { ids, error, timer });
      controller.enqueue(endMarkBytes(stream));
      controller.close();
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { value, done } = await reader.read();
          if (done) finish(controller, null);
          else controller.enqueue(value);
        } catch (error) {
          finish(controller, error);
        }
      },
      cancel(reason) {
        // The SDK stopped reading (its transport closed): no mark will come through it.
        if (!over) {
          over = true;
          ended(ids, reason ?? null);
        }
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return {
    fetch: watched as typeof fetch,
    ends(message) {
      if (!isJSONRPCNotification(message) || message.method !== END_MARK) return false;
      const stream = (message.params as { stream?: unknown } | undefined)?.stream;
      if (typeof stream === "number") tell(stream);
      return true;
    },
  };
}

/**
 * The mark of stream `stream`: first a line break and an event type of docket's own, which end
 * an event the stream broke off in (dispatched as that type, the SDK skips it; after a whole
 * event, nothing is dispatched), then the mark as one event of its own.
 */
function endMarkBytes(stream: number): Uint8Array {
  const mark = JSON.stringify({ jsonrpc: "2.0", method: END_MARK, params: { stream } });
  return new TextEncoder().encode(`\nevent: docket-cut-short\n\ndata: ${mark}\n\n`);
}

/** The ids of the JSON-RPC requests a POST body holds (one message, or a batch). */
function requestIdsOf(init: RequestInit | undefined): RequestId[] {
  if (init?.method !== "POST" || typeof init.body !== "string") return [];
  try {
    const parsed = JSON.parse(init.body) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((message) => {
      const { id, method } = (message ?? {}) as { id?: unknown; method?: unknown };
      return typeof method === "string" && (typeof id === "string" || typeof id === "number") ? [id] : [];
    });
  } catch {
    return [];
  }
}

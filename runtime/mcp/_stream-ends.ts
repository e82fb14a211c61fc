import type { RequestId } from "@modelcontextprotocol/sdk/types.js";

/** Told when the answer stream of a POST that carried `ids` (the agent's requests) has ended, for any reason. */
export type StreamEnded = (ids: RequestId[], error: unknown) => void;

/**
 * A `fetch` for the SDK's Streamable HTTP client transport that says when each request's answer
 * stream ends. The SDK reads an answer sent as an event stream in the background and, when that
 * stream ends or breaks before the answer came (the server stopped, crashed or restarted), drops
 * it without a word: the agent's request then waits forever, and `docket mcp` with it. With this
 * the bridge learns which requests the ended stream carried and answers those still waiting.
 */
export function fetchTellingStreamEnds(ended: StreamEnded, base: typeof fetch = fetch): typeof fetch {
  const watched = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const ids = requestIdsOf(init);
    const response = await base(input, init);
    if (ids.length === 0 || !response.body || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) return response;
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { value, done } = await reader.read();
          if (done) {
            controller.close();
            ended(ids, null);
          } else controller.enqueue(value);
        } catch (error) {
          controller.error(error);
          ended(ids, error);
        }
      },
      cancel(reason) {
        ended(ids, reason ?? null);
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return watched as typeof fetch;
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

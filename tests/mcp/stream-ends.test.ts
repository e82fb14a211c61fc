// runtime/mcp/_stream-ends.ts with the SDK's own Streamable HTTP client transport: the end of an
// answer stream is told after every message the stream held was handed on, however slowly.
import { describe, expect, test } from "bun:test";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { watchStreamEnds } from "../../runtime/mcp/_stream-ends.ts";

const CALL: JSONRPCMessage = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "team_big", arguments: {} } };

/** An answer as an event stream: `chunks`, then its end — or, with `breakWith`, an error instead. */
function answering(chunks: string[], breakWith?: Error): typeof fetch {
  return (async () => {
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
        if (breakWith) controller.error(breakWith);
        else controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  }) as unknown as typeof fetch;
}

/** What the SDK reads, `ms` late per chunk: a large answer being parsed while its bytes have all come. */
function slowly(inner: typeof fetch, ms: number): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const response = await inner(input, init);
    const late = new TransformStream<Uint8Array, Uint8Array>({ transform: async (chunk, controller) => (await Bun.sleep(ms), controller.enqueue(chunk)) });
    return new Response(response.body!.pipeThrough(late), { headers: response.headers });
  }) as unknown as typeof fetch;
}

/** Sends CALL through the SDK's transport over `base`, and answers what happened, in order, once the stream's end was told. */
async function relay(base: (watched: typeof fetch) => typeof fetch, answer: typeof fetch): Promise<{ seen: string[]; errors: unknown[] }> {
  const seen: string[] = [];
  const errors: unknown[] = [];
  let told = () => undefined as void;
  const toldOnce = new Promise<void>((resolve) => (told = resolve));
  const watch = watchStreamEnds((ids, error) => {
    seen.push(`ended ${JSON.stringify(ids)}${error ? ` (${(error as Error).message})` : ""}`);
    told();
  }, answer);
  const transport = new StreamableHTTPClientTransport(new URL("http://127.0.0.1:9/mcp"), { fetch: base(watch.fetch) });
  transport.onmessage = (message) => {
    if (watch.ends(message)) return;
    seen.push(`message ${JSON.stringify((message as { id?: unknown }).id)}`);
  };
  transport.onerror = (error) => void errors.push(error);
  await transport.start();
  await transport.send(CALL);
  await toldOnce;
  await transport.close();
  return { seen, errors };
}

describe("watchStreamEnds", () => {
  test("the end of an answer stream is told after its answer is handed on, even when the SDK hands it on long after its bytes came", async () => {
    const answer = `data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, result: { content: [], structuredContent: { s: "x".repeat(100_000) } } })}\n\n`;
    // Each chunk reaches the SDK 300 ms late: told when the bytes ended (after a fixed 200 ms), the
    // request looked unanswered and was answered "the server stopped", then answered again.
    const { seen, errors } = await relay((watched) => slowly(watched, 300), answering([": open\n\n", answer]));
    expect(seen).toEqual(["message 1", "ended [1]"]);
    expect(errors).toEqual([]);
  });

  test("a stream that breaks in the middle of an event ends with the error, and the half event is dropped without a word", async () => {
    const cut = `data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, result: { content: [] } }).slice(0, 20)}`;
    const { seen, errors } = await relay((watched) => watched, answering([": open\n\n", cut], new Error("connection reset")));
    expect(seen).toEqual(["ended [1] (connection reset)"]);
    // The SDK is handed no half message to refuse (it would say the server sent something that is no MCP message).
    expect(errors).toEqual([]);
  });

  test("a stream that ends right after a whole event hands that event on, then its end", async () => {
    const progress = `data: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } })}\n\n`;
    const { seen } = await relay((watched) => watched, answering([progress]));
    expect(seen).toEqual(["message undefined", "ended [1]"]);
  });
});

// The floor of bench/large-inputs.ts: a bare `Bun.serve` doing with a large input what docket
// cannot avoid — the body read and parsed once, its text handed to a worker that parses it again
// and answers a count — and nothing else (no checks, no store, no events). `GET /healthz` answers
// at once. Prints its URL on stderr, as `docket serve` does. Run it with Bun.
const worker = new Worker(URL.createObjectURL(new Blob(['self.onmessage = (m) => postMessage(Object.keys(JSON.parse(m.data).data).length);'], { type: "application/javascript" })));
const waiting: Array<(items: number) => void> = [];
worker.onmessage = (message: MessageEvent<number>) => waiting.shift()?.(message.data);

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  maxRequestBodySize: 64 * 1024 * 1024,
  async fetch(request) {
    if (request.method !== "POST") return new Response('{"ok":true}');
    const text = await request.text();
    const input = JSON.parse(text) as { input: unknown };
    const items = new Promise<number>((resolve) => waiting.push(resolve));
    worker.postMessage(JSON.stringify(input.input));
    return Response.json({ items: await items });
  },
});
process.stderr.write(`floor serving at http://127.0.0.1:${server.port}\n`);

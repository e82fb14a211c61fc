// The floor of the HTTP dispatch path (bench/http-dispatch.ts): a bare `Bun.serve` doing the I/O
// an HTTP start of a no-op execution needs and nothing of docket — no routing, validation, store,
// ids, events kept or checked. `POST` any path: the JSON body parsed, an answer of the size of
// docket's start answer (a snapshot of ~0.9 KB), one task round trip to a worker (2 workers, one
// task in flight each, as a pool runs), and three frames of docket's size to every `/events`
// socket (created at the start, started and completed when the worker answers), gathered per turn
// and written corked. Prints its URL on stderr, as `docket serve` does. Run it with Bun.
import type { ServerWebSocket } from "bun";

const WORKERS = 2;
const workers = Array.from({ length: WORKERS }, () => new Worker(new URL("./http-floor-worker.ts", import.meta.url).href));
const idle = [...workers];
const queued: string[] = [];
const sockets = new Set<ServerWebSocket<unknown>>();
let pending: string[] = [];
let flushing = false;
let next = 0;
let sequence = 0;

/** An event frame shaped and sized like docket's (docs/protocol.md's envelope). */
const frame = (type: string, id: string) =>
  JSON.stringify({ schema_version: "1", event_id: `${id}:${++sequence}`, execution_id: id, sequence: 1, type, timestamp: new Date().toISOString(), data: { capability: "bench.noop", actor: { kind: "http" }, request_id: "r-00000000000000000000" } });

const flush = () => {
  flushing = false;
  const frames = pending;
  pending = [];
  for (const socket of sockets) socket.cork(() => frames.forEach((text) => socket.sendText(text)));
};
const emit = (type: string, id: string) => {
  if (sockets.size === 0) return;
  pending.push(frame(type, id));
  if (!flushing) (flushing = true), setImmediate(flush);
};
const dispatch = () => {
  while (idle.length > 0 && queued.length > 0) idle.pop()!.postMessage(queued.shift()!);
};
for (const worker of workers) {
  worker.onmessage = (message: MessageEvent<string>) => {
    emit("execution.started", message.data);
    emit("execution.completed", message.data);
    idle.push(worker);
    dispatch();
  };
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request, self) {
    if (request.method === "GET" && new URL(request.url).pathname === "/events") return self.upgrade(request) ? undefined : new Response("upgrade failed", { status: 400 });
    const body = JSON.parse(await request.text()) as { capability: string };
    const id = `x-floor-${(next++).toString(16).padStart(8, "0")}`;
    emit("execution.created", id);
    queued.push(id);
    dispatch();
    const answer = {
      execution: {
        id,
        capability: body.capability,
        state: "queued",
        created_at: new Date().toISOString(),
        last_sequence: 1,
        links: { self: `/api/v1/executions/get?id=${id}`, events: `/api/v1/executions/events?id=${id}`, socket: `/events?execution=${id}`, cockpit: `/cockpit/executions/${id}` },
        actor: { kind: "http" },
        repository: "/tmp/docket-bench-floor",
        run_id: null,
        session_key: null,
        request_id: "r-00000000000000000000",
        trace_id: "00000000000000000000000000000000",
        started_at: null,
        finished_at: null,
        duration_ms: null,
        cancellable: false,
        effect: "read",
        input: {},
        capability_version: "sha256:0000000000000000",
        failure: null,
        steps: [],
        progress: null,
        diagnostics: [],
        diagnostics_dropped: 0,
        steps_dropped: 0,
        log: [],
        log_dropped: 0,
        retained_from: 1,
        truncated: false,
      },
      deduplicated: false,
    };
    return new Response(JSON.stringify(answer), { headers: { "Content-Type": "application/json", "X-Request-Id": "r-00000000000000000000" } });
  },
  websocket: {
    open(socket) {
      sockets.add(socket);
      socket.sendText(JSON.stringify({ schema_version: "1", type: "stream.ready" }));
    },
    close(socket) {
      sockets.delete(socket);
    },
    message() {},
  },
});
console.error(`floor serving at http://127.0.0.1:${server.port}`);

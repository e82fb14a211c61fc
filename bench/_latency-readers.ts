// The latency readers: `clients` sockets on one worker thread, their own event loop and core as in
// a separate process, yet on the clock the emitters use (`now()`: threads and processes of this
// machine agree to ~0.1 ms), so each frame's emit time, carried in its progress message, gives its
// latency. The same readers serve docket and the peers; only the way of connecting differs.
import { parentPort, workerData } from "node:worker_threads";
import { now } from "./peers/_frame.mjs";

/** How the readers connect: docket's /events, a plain WebSocket server, or Socket.IO. */
export type ReaderKind = "docket" | "ws" | "socket.io";

/** What the worker is started with. */
export interface LatencyReadersData {
  url: string;
  clients: number;
  kind: ReaderKind;
  /** The sequence before the first frame to expect (gaps after it count as dropped). */
  after: number;
}

/** What the worker posts: `{ ready: true }` once every client can receive, then this. */
export interface LatencyFigures {
  p50: number;
  p99: number;
  dropped: number;
  frames: number;
}

const FRAME = /"sequence":(\d+).*"message":"([0-9.]+)"/;

if (parentPort && workerData?.kind) {
  const { url, clients, kind, after } = workerData as LatencyReadersData;
  const latencies: number[] = [];
  let dropped = 0;
  let ready = 0;
  let done = 0;
  const isReady = () => ++ready === clients && parentPort!.postMessage({ ready: true });
  const finish = () => {
    if (++done < clients) return;
    latencies.sort((a, b) => a - b);
    const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
    parentPort!.postMessage({ p50: p(0.5), p99: p(0.99), dropped, frames: latencies.length } satisfies LatencyFigures);
  };
  /** One client's frames: true once the last (a frame without an emit time) arrived. */
  const onFrame = (state: { last: number }, text: string, at: number): boolean => {
    const match = FRAME.exec(text);
    const sequence = Number(match ? match[1] : /"sequence":(\d+)/.exec(text)![1]);
    dropped += sequence - state.last - 1;
    state.last = sequence;
    if (!match) return true;
    latencies.push(at - Number(match[2]));
    return false;
  };
  const { io } = kind === "socket.io" ? await import("socket.io-client") : { io: null };
  for (let i = 0; i < clients; i++) {
    const state = { last: after };
    if (io) {
      // forceNew: one connection per client, as 100 browsers would have (the default shares one).
      const socket = io(url, { transports: ["websocket"], forceNew: true });
      socket.on("connect", isReady);
      socket.on("e", (text: string) => onFrame(state, text, now()) && (socket.disconnect(), finish()));
      continue;
    }
    const socket = new WebSocket(url);
    if (kind === "ws") socket.onopen = isReady;
    socket.onmessage = (message) => {
      const at = now();
      const text = message.data as string;
      if (kind === "docket" && text.charCodeAt(2) === 116 /* {"type":"stream.… */) {
        if (text.includes('"stream.ready"')) isReady();
        return;
      }
      if (onFrame(state, text, at)) socket.close(), finish();
    };
  }
}

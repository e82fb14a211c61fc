// A live-channel peer (a WebSocket server a user might pick instead of docket's /events), run on
// Node in its own process, measured the way docket's live channel is: a burst to one reader in
// another process, and latency at 1,000 events/s to N readers on a worker thread.
import { Worker } from "node:worker_threads";
import { join } from "node:path";
import { startChild, type BenchChild } from "../_child.ts";
import type { LatencyFigures, ReaderKind } from "../_latency-readers.ts";

/** How one peer is started, read and described. */
export interface LivePeer {
  /** The peer as every row names it: library, runtime, settings. */
  config: string;
  /** The server script in bench/peers, run with `node SCRIPT COUNT`. */
  server: string;
  /** The URL its readers connect to, from the port it listens on. */
  url(port: number): string;
  kind: ReaderKind;
  /** The command line of a burst reader in its own process: prints `{"frames","ms"}`. */
  burstReader(url: string, count: number): string[];
}

/** Starts the peer's server on Node and waits for its port. */
async function startPeer(peer: LivePeer, count: number): Promise<{ server: BenchChild; url: string }> {
  const server = startChild("node", [join(import.meta.dir, peer.server), String(count)]);
  const line = await server.next();
  const port = /^port (\d+)$/.exec(line)?.[1];
  if (!port) throw new Error(`${peer.server} said "${line}" instead of its port`);
  return { server, url: peer.url(Number(port)) };
}

/** Frames per second of a `count`-frame burst to one reader, timed by the reader from its request to the last frame. */
export async function peerBurst(peer: LivePeer, count: number): Promise<number> {
  const { server, url } = await startPeer(peer, count);
  const [command, ...args] = peer.burstReader(url, count);
  const reader = startChild(command!, args);
  try {
    const { frames, ms } = JSON.parse(await reader.next()) as { frames: number; ms: number };
    return frames / (ms / 1000);
  } finally {
    reader.stop();
    server.stop();
  }
}

/**
 * Latency emit → reader for `clients` readers at 1,000 frames/s for `seconds`, and the frames
 * dropped. A fresh `node` has not compiled its send path yet (docket's server runs in the warm
 * bench process), so one second with the same number of readers goes first, unmeasured.
 */
export async function peerLatency(peer: LivePeer, clients: number, seconds: number): Promise<LatencyFigures & { events: number }> {
  const { server, url } = await startPeer(peer, 0);
  try {
    await rateRound(server, url, peer, clients, 1);
    return await rateRound(server, url, peer, clients, seconds);
  } finally {
    server.stop();
  }
}

async function rateRound(server: BenchChild, url: string, peer: LivePeer, clients: number, seconds: number): Promise<LatencyFigures & { events: number }> {
  const readers = startLatencyReaders({ url, clients, kind: peer.kind, after: 0 });
  try {
    await readers.next(); // every reader is connected
    server.send(`rate ${seconds}`);
    const figures = (await readers.next()) as LatencyFigures;
    const events = Number(/^done (\d+)$/.exec(await server.next())?.[1]);
    return { ...figures, events };
  } finally {
    await readers.stop();
  }
}

/** The readers' worker (bench/_latency-readers.ts) and its messages, one at a time. */
export function startLatencyReaders(data: import("../_latency-readers.ts").LatencyReadersData) {
  const worker = new Worker(new URL("../_latency-readers.ts", import.meta.url), { workerData: data });
  const messages: unknown[] = [];
  let wake: (() => void) | null = null;
  let failure: Error | null = null;
  worker.on("message", (m) => (messages.push(m), wake?.()));
  worker.on("error", (error: Error) => ((failure = error), wake?.()));
  return {
    async next(): Promise<unknown> {
      while (messages.length === 0) {
        if (failure) throw failure;
        await new Promise<void>((r) => (wake = r));
      }
      return messages.shift();
    },
    stop: () => worker.terminate(),
  };
}

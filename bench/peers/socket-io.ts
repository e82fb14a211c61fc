// The Socket.IO peer: socket.io 4 on Node 20, read by socket.io-client 4 (on Bun) over the
// websocket transport only, one connection per client.
import type { LivePeer } from "./live-peer.ts";

export const SOCKET_IO_PEER: LivePeer = {
  config: "socket.io 4 on Node 20, defaults; clients socket.io-client 4 on Bun, websocket transport, forceNew; burst: one emit per frame, waiting for engine.io's drain at 1,024 queued; broadcast: io.emit",
  server: "socket-io-server.mjs",
  url: (port) => `http://127.0.0.1:${port}`,
  kind: "socket.io",
  burstReader: (url, count) => [process.execPath, new URL("./socket-io-reader.ts", import.meta.url).pathname, url, String(count)],
};

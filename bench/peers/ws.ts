// The `ws` peer: ws 8's WebSocketServer on Node 20 (on Bun, `import "ws"` gives Bun's own
// replacement built on Bun.serve, which would not be the library a user picks).
import type { LivePeer } from "./live-peer.ts";

/** Read by Bun WebSocket clients, the same as docket's readers. */
export const WS_PEER: LivePeer = {
  config: "ws 8 WebSocketServer on Node 20, defaults (no compression); burst: one send per frame, paused above 1 MiB buffered; broadcast: one send per client",
  server: "ws-server.mjs",
  url: (port) => `ws://127.0.0.1:${port}/`,
  kind: "ws",
  burstReader: (url, count) => [process.execPath, new URL("../live-channel.ts", import.meta.url).pathname, "--client", url, "raw", String(count)],
};

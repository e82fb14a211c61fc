// The Socket.IO burst reader, in its own process: `bun socket-io-reader.ts URL COUNT` asks for the
// burst with `go`, counts `e` events and prints `{"frames","ms"}` after the COUNT-th.
import { io } from "socket.io-client";

const [url, count] = [process.argv[2]!, Number(process.argv[3])];
setTimeout(() => process.exit(3), 60_000);
const socket = io(url, { transports: ["websocket"] });
let frames = 0;
let started = 0;
socket.on("connect", () => {
  started = performance.now();
  socket.emit("go");
});
socket.on("e", () => {
  if (++frames < count) return;
  console.log(JSON.stringify({ frames, ms: performance.now() - started }));
  process.exit(0);
});

// The Socket.IO peer on Node: `node socket-io-server.mjs COUNT`. A client's `go` asks for a burst
// of COUNT frames as `e` events (waiting for engine.io's drain whenever 1,024 are queued); a
// `rate S` command broadcasts each frame with `io.emit` (encoded once for every client).
import { createServer } from "node:http";
import { Server } from "socket.io";
import { burstFrames, control } from "./_peer-server.mjs";

const frames = burstFrames(Number(process.argv[2]));
const http = createServer();
const io = new Server(http);
io.on("connection", (socket) => {
  socket.once("go", () => {
    let next = 0;
    const pump = () => {
      while (next < frames.length) {
        socket.emit("e", frames[next++]);
        if (socket.conn.writeBuffer.length >= 1024) return void socket.conn.once("drain", pump);
      }
    };
    pump();
  });
});
http.listen(0, "127.0.0.1", () => control(http.address().port, (frame) => io.emit("e", frame)));

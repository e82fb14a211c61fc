// The `ws` peer on Node: `node ws-server.mjs COUNT`. A reader's first message asks for a burst of
// COUNT frames (one send each, pausing while more than 1 MiB is buffered); a `rate S` command
// broadcasts to every client (one send per client per frame, ws's broadcast idiom).
import { WebSocketServer } from "ws";
import { burstFrames, control } from "./_peer-server.mjs";

const frames = burstFrames(Number(process.argv[2]));
const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
wss.on("connection", (ws) => {
  ws.once("message", () => {
    let next = 0;
    const pump = () => {
      while (next < frames.length) {
        ws.send(frames[next++]);
        if (ws.bufferedAmount > 1024 * 1024) return void setImmediate(pump);
      }
    };
    pump();
  });
});
wss.once("listening", () =>
  control(wss.address().port, (frame) => {
    for (const client of wss.clients) client.send(frame);
  }),
);

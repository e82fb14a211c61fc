import { connect, type Socket } from "node:net";
import { randomBytes } from "node:crypto";

/** What a raw WebSocket handshake got back, and the socket's frames when it was upgraded. */
export interface RawUpgrade {
  status: number;
  headers: Record<string, string>;
  /** Body of a refusal. */
  body: string;
  /** Text frames received so far (upgraded only). */
  frames: string[];
  socket: Socket;
  /** Pings received (opcode 9). */
  pings: number;
  /** Resolves once a ping has arrived. */
  waitPing(): Promise<void>;
  /** Resolves with the server's close frame (this client never answers a ping, nor a close). */
  closing: Promise<{ code: number; reason: string }>;
  /** Resolves at the first pong (opcode 10): the answer to a ping this client sent with `send`. */
  pong: Promise<void>;
  /** Resolves when the connection has ended, with or without a close frame. */
  ended: Promise<void>;
  /** Sends one client frame (masked, FIN set): opcode 1 text, 2 binary, 9 ping. */
  send(opcode: number, payload: Uint8Array): void;
  /** Resolves when a frame matching `predicate` has arrived. */
  waitFor(predicate: (frame: string) => boolean): Promise<string>;
  close(): void;
}

/**
 * A WebSocket client on a bare TCP socket: shows the handshake status of refusals (403, 401, 400,
 * 503) that browser-style clients hide, and can stop reading (`socket.pause()`) to play a client
 * whose reader stalled.
 */
export function rawUpgrade(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<RawUpgrade> {
  const url = new URL(baseUrl);
  const socket = connect(Number(url.port), url.hostname);
  const request = [
    `GET ${path} HTTP/1.1`,
    `Host: ${headers.Host ?? url.host}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
    "Sec-WebSocket-Version: 13",
    ...Object.entries(headers)
      .filter(([k]) => k !== "Host")
      .map(([k, v]) => `${k}: ${v}`),
    "",
    "",
  ].join("\r\n");
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    let upgraded: RawUpgrade | null = null;
    const waiters: Array<{ predicate: (f: string) => boolean; resolve: (f: string) => void }> = [];
    const pingWaiters: Array<() => void> = [];
    let closed!: (frame: { code: number; reason: string }) => void;
    const closing = new Promise<{ code: number; reason: string }>((r) => (closed = r));
    let ponged!: () => void;
    const pong = new Promise<void>((r) => (ponged = r));
    const ended = new Promise<void>((r) => socket.once("close", () => r()));
    const onFrame = (text: string) => {
      upgraded!.frames.push(text);
      for (const w of [...waiters]) if (w.predicate(text)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(text);
      }
    };
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!upgraded) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString("latin1").split("\r\n");
        const status = Number(head[0]!.split(" ")[1]);
        const hs: Record<string, string> = {};
        for (const line of head.slice(1)) {
          const i = line.indexOf(":");
          hs[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
        buffer = buffer.subarray(end + 4);
        upgraded = {
          status,
          headers: hs,
          body: "",
          frames: [],
          socket,
          pings: 0,
          closing,
          pong,
          ended,
          send: (opcode, payload) => socket.write(clientFrame(opcode, payload)),
          waitPing: () => (upgraded!.pings > 0 ? Promise.resolve() : new Promise<void>((r) => pingWaiters.push(r))),
          waitFor: (predicate) => {
            const found = upgraded!.frames.find(predicate);
            return found !== undefined ? Promise.resolve(found) : new Promise((r) => waiters.push({ predicate, resolve: r }));
          },
          close: () => socket.destroy(),
        };
        if (status !== 101) {
          const length = Number(hs["content-length"] ?? 0);
          const finish = () => {
            upgraded!.body = buffer.toString("utf8");
            socket.destroy();
            resolve(upgraded!);
          };
          if (buffer.length >= length) finish();
          else socket.on("end", finish).on("data", () => buffer.length >= length && finish());
          return;
        }
        resolve(upgraded);
      }
      if (upgraded.status !== 101) return;
      // Server frames are unmasked: FIN/opcode, 7/16/64-bit length, payload.
      for (;;) {
        if (buffer.length < 2) return;
        const opcode = buffer[0]! & 0x0f;
        let length = buffer[1]! & 0x7f;
        let offset = 2;
        if (length === 126) {
          if (buffer.length < 4) return;
          length = buffer.readUInt16BE(2);
          offset = 4;
        } else if (length === 127) {
          if (buffer.length < 10) return;
          length = Number(buffer.readBigUInt64BE(2));
          offset = 10;
        }
        if (buffer.length < offset + length) return;
        const payload = buffer.subarray(offset, offset + length);
        buffer = buffer.subarray(offset + length);
        if (opcode === 1) onFrame(payload.toString("utf8"));
        if (opcode === 8) closed({ code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005, reason: payload.subarray(2).toString("utf8") });
        if (opcode === 10) ponged();
        if (opcode === 9) {
          upgraded.pings++;
          for (const resolvePing of pingWaiters.splice(0)) resolvePing();
        }
      }
    });
    socket.write(request);
  });
}

/** A client frame: FIN and `opcode`, the 7/16/64-bit length, a mask key, the payload masked with it (all zeros: unchanged). */
function clientFrame(opcode: number, payload: Uint8Array): Buffer {
  const length = payload.length;
  const head = length < 126 ? Buffer.from([0x80 | opcode, 0x80 | length]) : length < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (length >= 126) {
    head[0] = 0x80 | opcode;
    head[1] = 0x80 | (length < 65536 ? 126 : 127);
    if (length < 65536) head.writeUInt16BE(length, 2);
    else head.writeBigUInt64BE(BigInt(length), 2);
  }
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

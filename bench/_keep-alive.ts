// A minimal HTTP/1.1 keep-alive client for load generation: one request at a time per connection,
// answers read by Content-Length (what wrk or oha do), on Bun's own TCP sockets. Bun's fetch (and
// node:net's streams) spend ~40–50 µs of CPU per request here — a third of what the server spends
// on a whole execution — and on a 2-core machine shared with the server that would measure the
// client more than the server.
import type { Socket } from "bun";

/** One answer: status and body (the body decoded as UTF-8). */
export interface Answer {
  status: number;
  body: string;
}

interface Waiting {
  resolve: (answer: Answer) => void;
  reject: (error: Error) => void;
}

/** One keep-alive connection to `host:port`. */
export class KeepAliveConnection {
  private buffer: Buffer = Buffer.alloc(0);
  private waiting: Waiting | null = null;
  private socket: Socket<undefined> | null = null;

  private constructor(private readonly host: string) {}

  /** Connects (bounded by `timeoutMs`). */
  static async open(host: string, port: number, timeoutMs = 5000): Promise<KeepAliveConnection> {
    const connection = new KeepAliveConnection(`${host}:${port}`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no connection to ${host}:${port} within ${timeoutMs} ms`)), timeoutMs)));
    try {
      connection.socket = await Promise.race([
        Bun.connect({
          hostname: host,
          port,
          socket: {
            data: (_socket, chunk) => connection.received(chunk),
            close: () => connection.fail(new Error("the server closed the connection")),
            error: (_socket, error) => connection.fail(error),
          },
        }),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
    connection.socket.setNoDelay(true);
    return connection;
  }

  /** POSTs a JSON body; resolves with the answer. One request at a time per connection. */
  post(path: string, json: string): Promise<Answer> {
    if (this.waiting || !this.socket) return Promise.reject(new Error("one request at a time per open connection"));
    const request = `POST ${path} HTTP/1.1\r\nHost: ${this.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      // A short request on an idle loopback socket is taken whole; a partial write would be a bug here.
      if (this.socket!.write(request) !== Buffer.byteLength(request)) this.fail(new Error("the request was not written whole"));
    });
  }

  close(): void {
    this.socket?.end();
    this.socket = null;
  }

  private fail(error: Error): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
  }

  private received(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const end = this.buffer.indexOf("\r\n\r\n");
    if (end < 0 || !this.waiting) return;
    const head = this.buffer.subarray(0, end).toString("latin1");
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!length) return this.fail(new Error(`an answer without Content-Length: ${head.split("\r\n")[0]}`));
    const total = end + 4 + Number(length[1]);
    if (this.buffer.length < total) return;
    const body = this.buffer.subarray(end + 4, total).toString("utf8");
    this.buffer = this.buffer.subarray(total);
    const waiting = this.waiting;
    this.waiting = null;
    waiting.resolve({ status: Number(head.slice(9, 12)), body });
  }
}

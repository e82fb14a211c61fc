/** One live-channel connection of a test: every frame parsed and kept, with waits on what arrives. */
export interface LiveConnection {
  frames: any[];
  socket: WebSocket;
  /** Resolves with the first frame (already received or to come) matching `predicate`. */
  waitFor(predicate: (frame: any) => boolean): Promise<any>;
  /** Resolves when the socket closed, with its close code. */
  closed: Promise<number>;
  close(): Promise<number>;
}

/** Opens `/events?<query>` with the runtime's WebSocket client; resolves once open. */
export function openLive(baseUrl: string, query = "", options: { protocols?: string[]; onFrame?: (frame: any) => void } = {}): Promise<LiveConnection> {
  const url = `${baseUrl.replace(/^http/, "ws")}/events${query ? `?${query}` : ""}`;
  const socket = new WebSocket(url, options.protocols);
  const frames: any[] = [];
  const waiters: Array<{ predicate: (f: any) => boolean; resolve: (f: any) => void }> = [];
  let resolveClosed!: (code: number) => void;
  const closed = new Promise<number>((r) => (resolveClosed = r));
  socket.onmessage = (message) => {
    const frame = JSON.parse(String(message.data));
    frames.push(frame);
    options.onFrame?.(frame);
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.predicate(frame)) waiters.splice(i, 1)[0]!.resolve(frame);
    }
  };
  socket.onclose = (event) => resolveClosed(event.code);
  return new Promise((resolve, reject) => {
    socket.onerror = () => reject(new Error(`WebSocket ${url} failed to open`));
    socket.onopen = () => {
      socket.onerror = null;
      resolve({
        frames,
        socket,
        closed,
        waitFor(predicate) {
          const found = frames.find(predicate);
          return found !== undefined ? Promise.resolve(found) : new Promise((r) => waiters.push({ predicate, resolve: r }));
        },
        close() {
          socket.close();
          return closed;
        },
      });
    };
  });
}

/** True for the frame that ends an execution. */
export const completedOf = (id: string) => (frame: any) => frame.type === "execution.completed" && frame.execution_id === id;

/** A WebSocket stand-in for socket.js: the test opens it, sends it frames and closes it from the server side. */
export interface FakeSocket {
  url: string;
  readyState: number;
  /** The client closed it (socket.js dropped it). */
  closedByClient: boolean;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: string }) => void) | null;
  onclose: ((event: { code: number }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  close(): void;
  /** The server accepted: `onopen`. */
  open(): void;
  /** The server sends one frame (an object, serialized as the real channel does). */
  receive(frame: unknown): void;
  /** The connection is lost: `onerror` then `onclose`. */
  lose(code?: number): void;
  /** The `after` cursor the client asked for, or null. */
  after(): number | null;
}

/**
 * A WebSocket constructor whose instances are recorded in `sockets`, newest last. `afterReceive`
 * runs after each frame is handed to the page (the execution page draws once a frame: the tests
 * read the page right after a frame, so the frame is drawn then).
 */
export function fakeWebSockets(afterReceive: () => void = () => {}): { WebSocket: new (url: string) => FakeSocket; sockets: FakeSocket[]; current(): FakeSocket | undefined } {
  const sockets: FakeSocket[] = [];
  class Fake implements FakeSocket {
    readyState = 0;
    closedByClient = false;
    onopen: FakeSocket["onopen"] = null;
    onmessage: FakeSocket["onmessage"] = null;
    onclose: FakeSocket["onclose"] = null;
    onerror: FakeSocket["onerror"] = null;
    constructor(readonly url: string) {
      sockets.push(this);
    }
    close() {
      this.closedByClient = true;
      this.readyState = 3;
    }
    open() {
      this.readyState = 1;
      this.onopen?.({});
    }
    receive(frame: unknown) {
      if (this.readyState === 3) return;
      this.onmessage?.({ data: JSON.stringify(frame) });
      afterReceive();
    }
    lose(code = 1006) {
      if (this.readyState === 3) return;
      this.readyState = 3;
      this.onerror?.({});
      this.onclose?.({ code });
    }
    after() {
      const value = new URL(this.url).searchParams.get("after");
      return value === null ? null : Number(value);
    }
  }
  return {
    WebSocket: Fake,
    sockets,
    current: () => {
      const last = sockets[sockets.length - 1];
      return last && last.readyState !== 3 ? last : undefined;
    },
  };
}

/** Where a server listens and how to stop it. */
export interface RunningServer {
  /** At the address bound, never a name it was asked to bind (`localhost` → `http://127.0.0.1:4700`). */
  url: string;
  port: number;
  /** Stops accepting and closes every connection. */
  stop(): Promise<void>;
}

/** Where to listen. */
export interface ListenOptions {
  host: string;
  port: number;
  /**
   * Seconds a connection may stay silent (Bun's `idleTimeout`, default 10). A direct call lifts it
   * for its own request (long-request.ts); tests shorten it. On Node, the seconds a request's head
   * may take to arrive (`headersTimeout`), so a head that stops half-way ends as on Bun.
   */
  idleTimeoutSeconds?: number;
  /** Where an error that escaped the app goes with its stack: the server's log. */
  log?: (line: string) => void;
}

/** The URL of a listening host and port (IPv6 literals bracketed). */
export function listenUrl(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

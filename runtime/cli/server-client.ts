import type { FailureDescriptor } from "../execution/failure.ts";
import { formatWindow } from "./run-reporter.ts";
import type { ExecutionEvent } from "../execution/protocol.ts";
import { isLeaseLive, leaseHolderGone, pidVisible, readLease, type Lease } from "../server/lease.ts";
import { checkoutFlockHeld, lockCheckout } from "../server/checkout-lock.ts";
import { LIVE_SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from "../server/guards.ts";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** What the API answered: its JSON body, or the failure descriptor of an error status. */
export type ServerAnswer = { ok: true; status: number; body: any } | { ok: false; status: number; failure: FailureDescriptor };

/** Options of one request. */
export interface ServerRequestOptions {
  /** Query parameters; undefined values are left out. */
  query?: Record<string, string | number | undefined>;
  /** A JSON body (POST). */
  body?: unknown;
  /** Give up after this long (default 10 s): a server that does not answer is as good as none. */
  timeoutMs?: number;
  /** Gives up at once when it aborts (the caller stopped waiting). */
  signal?: AbortSignal;
}

/** The server serving this checkout, as its lease names it; every request carries its token. */
export interface ServerClient {
  readonly url: string;
  readonly root: string;
  readonly pid: number;
  /** One request to the server. Throws ServerUnreachableError when nothing answers. */
  request(method: "GET" | "POST", path: string, options?: ServerRequestOptions): Promise<ServerAnswer>;
  /** The live channel's URL for `query` and the subprotocols that carry the token (docs/protocol.md, README "Access"). */
  liveChannel(query: URLSearchParams): { url: string; protocols: string[] };
}

/** Nothing answered at the server's URL (refused, reset, timed out). */
export class ServerUnreachableError extends Error {
  constructor(readonly url: string, readonly reason: string) {
    super(`nothing answers at ${url} (${reason})`);
    this.name = "ServerUnreachableError";
  }
}

/**
 * The server serving `root`, or null: the checkout's lease must name this root, its process must
 * be alive and its URL must answer for this root (`isLeaseLive`). A run never starts a server.
 */
export async function findServer(root: string, options: { timeout_ms?: number } = {}): Promise<ServerClient | null> {
  const lease = readLease(root);
  if (!lease) return null;
  return (await isLeaseLive(lease, options)) ? serverClient(lease) : null;
}

/** Why an answer's body could not be read, for ServerUnreachableError. */
function unreadBody(status: number, error: unknown): string {
  const e = error as Error;
  if (e?.name === "TimeoutError") return "no answer in time";
  if (e?.name === "SyntaxError") return `HTTP ${status} whose body is not JSON`;
  return `HTTP ${status} whose body was cut off: ${e?.message ?? String(error)}`;
}

/** Aborts its signal once nothing has come for `ms`: before the answer's head, then between two parts of its body. */
class SilenceTimeout {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout>;
  readonly signal = this.controller.signal;

  constructor(private readonly ms: number) {
    this.timer = this.arm();
  }

  /** The body's text, the wait starting again with each part that arrives. */
  async read(response: Response): Promise<string> {
    this.clear();
    this.timer = this.arm();
    if (!response.body) return "";
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text + decoder.decode();
      text += decoder.decode(value, { stream: true });
      this.clear();
      this.timer = this.arm();
    }
  }

  clear(): void {
    clearTimeout(this.timer);
  }

  private arm(): ReturnType<typeof setTimeout> {
    return setTimeout(() => this.controller.abort(new DOMException("no answer in time", "TimeoutError")), this.ms);
  }
}

/** How many times a read is asked while the server's large-answer budget is spent (see request). */
const BUSY_TRIES = 5;

/** What a WebSocket subprotocol name may hold: an HTTP token (RFC 7230 tchar), as `new WebSocket` checks it. */
const SUBPROTOCOL_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A client of the server a lease names. */
export function serverClient(lease: Lease): ServerClient {
  const auth: Record<string, string> = lease.token ? { Authorization: `Bearer ${lease.token}` } : {};
  const requestOnce = async (method: "GET" | "POST", path: string, options: ServerRequestOptions = {}): Promise<ServerAnswer> => {
    const url = new URL(path, lease.url);
    for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    // The time given is a bound on silence, not on the whole answer: a large answer that keeps
    // arriving on a loaded machine is read to its end, one that stops for that long is none.
    const silence = new SilenceTimeout(options.timeoutMs ?? 10_000);
    let response: Response;
    let body: any;
    try {
      try {
        response = await fetch(url, {
          method,
          headers: options.body === undefined ? auth : { ...auth, "Content-Type": "application/json" },
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          signal: options.signal ? AbortSignal.any([silence.signal, options.signal]) : silence.signal,
        });
      } catch (error) {
        const e = error as Error;
        throw new ServerUnreachableError(lease.url, e?.name === "TimeoutError" ? "no answer in time" : (e?.message ?? String(error)));
      }
      try {
        body = JSON.parse(await silence.read(response));
      } catch (error) {
        // An answer cut off, silent too long or not JSON is none, never a success with nothing in
        // it (`executions show` printed null and exited 0).
        if (response.ok) throw new ServerUnreachableError(lease.url, unreadBody(response.status, error));
        body = null;
      }
    } finally {
      silence.clear();
    }
    if (response.ok) return { ok: true, status: response.status, body };
    const failure = body?.error as FailureDescriptor | undefined;
    if (failure && typeof failure.error_code === "string" && typeof failure.message === "string") return { ok: false, status: response.status, failure };
    throw new ServerUnreachableError(lease.url, `HTTP ${response.status} without a failure descriptor`);
  };
  return {
    url: lease.url,
    root: lease.root,
    pid: lease.pid,
    async request(method, path, options = {}) {
      // A read refused while the server sends other clients' large answers (answer_bytes_in_flight)
      // is asked again after the second it says to wait, a few times: nothing was changed by it.
      for (let attempt = 1; ; attempt++) {
        const answer = await requestOnce(method, path, options);
        const busy = !answer.ok && answer.status === 503 && answer.failure.context?.reason === "answers_in_flight";
        if (!busy || method !== "GET" || attempt >= BUSY_TRIES) return answer;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    },
    liveChannel(query) {
      const url = new URL(`/events?${query}`, lease.url);
      url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
      // A WebSocket cannot carry an Authorization header from every client: the token rides as a
      // subprotocol, which is an HTTP token (RFC 7230 tchar). One holding another character (`/`,
      // `+`, `=` of base64, a `,` that splits the offer) goes as `?token=` instead: offered as a
      // subprotocol, the WebSocket refused to open and the follow failed (serve tester, session 48).
      if (lease.token === null || lease.token === undefined) return { url: url.toString(), protocols: [] };
      if (SUBPROTOCOL_NAME.test(lease.token)) return { url: url.toString(), protocols: [LIVE_SUBPROTOCOL, `${TOKEN_SUBPROTOCOL_PREFIX}${lease.token}`] };
      url.searchParams.set("token", lease.token);
      return { url: url.toString(), protocols: [LIVE_SUBPROTOCOL] };
    },
  };
}

/** How reading or following an execution's events ended. */
export type EventsOutcome = { ok: true; last_sequence: number } | { ok: false; failure: FailureDescriptor } | { ok: false; reason: string };

/** Options of {@link readEvents} and {@link followEvents}. */
export interface EventsOptions {
  id: string;
  /** Events with a sequence above this. */
  after: number;
  onEvent(event: ExecutionEvent): void;
  /** Something the reader should know (history already dropped), one line. */
  onNote(line: string): void;
  /** A follow's channel went quiet past a heartbeat (a server stopped or frozen): said once a follow, one line, before the follow gives up on it. */
  onQuiet?(line: string): void;
  /** Stops reading or following when aborted (whoever took the events left); the outcome then says so. */
  signal?: AbortSignal;
}

/** The outcome of reading or following that `signal` stopped. */
const STOPPED: EventsOutcome = { ok: false, reason: "stopped: nobody takes the events any more" };

/** Reads an execution's retained events after a cursor over HTTP, page by page, until its last sequence. */
export async function readEvents(server: ServerClient, options: EventsOptions): Promise<EventsOutcome> {
  let after = options.after;
  for (;;) {
    if (options.signal?.aborted) return STOPPED;
    const page = await server.request("GET", "/api/v1/executions/events", { query: { id: options.id, after, limit: 1000 } });
    if (!page.ok) return { ok: false, failure: page.failure };
    const { events, truncated, retained_from, last_sequence } = page.body as { events: ExecutionEvent[]; truncated: boolean; retained_from: number; last_sequence: number };
    if (truncated) options.onNote(`events ${after + 1}–${retained_from - 1} of ${options.id} were already dropped (events_retained); showing what is kept`);
    for (const event of events) {
      if (options.signal?.aborted) return STOPPED;
      if (event.sequence > after) options.onEvent(event);
    }
    after = Math.max(after, events.at(-1)?.sequence ?? after);
    if (events.length === 0 || after >= last_sequence) return { ok: true, last_sequence: after };
  }
}

/** The live channel's heartbeat until its `stream.ready` says the server's (the default `heartbeat_ms`). */
const DEFAULT_HEARTBEAT_MS = 20_000;
/**
 * Heartbeats a follow may miss before it takes the server for one that does not answer: a quiet
 * connection gets one within 1.25 heartbeats (docs/protocol.md, "Heartbeat"), and the server
 * itself gives up on a client that leaves its ping unanswered a heartbeat later.
 */
const HEARTBEATS_MISSED = 2;

/** Heartbeats of silence after which a follow says the server went quiet (between the 1.25 it may take and the give-up). */
const QUIET_HEARTBEATS = 1.6;

/**
 * Follows one execution over the live channel (`/events?execution=<id>&after=<n>`, the runtime's
 * built-in WebSocket) until its `execution.completed`. Each event is handed on once, in order: an
 * event at or below the last one seen is dropped, and a gap (a jump in sequence, `stream.lagged`)
 * is read over HTTP before going on. A channel on which nothing comes for two heartbeats (a
 * server stopped or frozen) ends the follow, saying the server does not answer and where to resume;
 * so does one that closes or breaks before the execution ended (a server killed or shutting down).
 */
export function followEvents(server: ServerClient, options: EventsOptions): Promise<EventsOutcome> {
  const { url, protocols } = server.liveChannel(new URLSearchParams({ execution: options.id, after: String(options.after) }));
  let last = options.after;
  let done = false;
  let heartbeatMs = DEFAULT_HEARTBEAT_MS;
  let silence: ReturnType<typeof setTimeout> | undefined;
  let quiet: ReturnType<typeof setTimeout> | undefined;
  let quietSaid = false;
  return new Promise((resolve) => {
    let socket: WebSocket;
    try {
      socket = new WebSocket(url, protocols);
    } catch (error) {
      // Said without the URL: it may carry the token.
      return resolve({ ok: false, reason: `the live channel of the server at ${server.url} could not be opened (${error instanceof Error ? error.name : "error"}); read the events with docket executions events ${options.id} --after ${last} instead` });
    }
    const settle = (outcome: EventsOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(silence);
      clearTimeout(quiet);
      options.signal?.removeEventListener("abort", stop);
      socket.close();
      resolve(outcome);
    };
    // Every frame (a heartbeat included) restarts the wait; the connection's opening is waited for as long.
    const listen = () => {
      clearTimeout(silence);
      clearTimeout(quiet);
      const waitMs = heartbeatMs * HEARTBEATS_MISSED;
      // A heartbeat missed: said before the give-up, once a follow, so that a follower does not
      // wait in silence. Past the 1.25 heartbeats a quiet server may take, with room for a late
      // timer: at 1.25 it was said over and over beside a healthy server (checking tester).
      if (options.onQuiet && !quietSaid) {
        const quietMs = heartbeatMs * QUIET_HEARTBEATS;
        quiet = setTimeout(() => {
          quietSaid = true;
          options.onQuiet?.(`nothing has come from the server at ${server.url} for ${formatWindow(quietMs)}, though it sends a heartbeat at least every ${formatWindow(heartbeatMs * 1.25)}: it may be stopped, frozen or too busy; waiting for it until ${formatWindow(waitMs)} have passed`);
        }, quietMs);
      }
      silence = setTimeout(() => {
        settle({ ok: false, reason: `the server at ${server.url} does not answer: nothing came on the live channel for ${formatWindow(waitMs)}, though it sends a heartbeat at least every ${formatWindow(heartbeatMs * 1.25)} (it is stopped, frozen or too busy); follow again with --after ${last} once it answers` });
      }, waitMs);
    };
    listen();
    const deliver = (event: ExecutionEvent) => {
      if (event.sequence <= last) return;
      last = event.sequence;
      options.onEvent(event);
      if (event.type === "execution.completed") settle({ ok: true, last_sequence: last });
    };
    // A follow with nobody left to hand events to ends at once, not when the execution does.
    const stop = () => settle(STOPPED);
    if (options.signal?.aborted) stop();
    options.signal?.addEventListener("abort", stop, { once: true });
    const fill = async () => {
      const read = await readEvents(server, { ...options, after: last, onEvent: deliver });
      if (!read.ok) settle(read);
    };
    // Frames are handled one after another: a gap read over HTTP finishes before the next frame.
    let queue = Promise.resolve();
    socket.onmessage = (message) => {
      if (!done) listen();
      queue = queue.then(async () => {
        if (done) return;
        const frame = JSON.parse(String(message.data)) as { type: string; sequence?: number; reason?: string; heartbeat_ms?: unknown };
        // stream.heartbeat needs nothing, nor does stream.ready but its heartbeat: dropped history shows as a gap, read below.
        if (frame.type === "stream.ready" && typeof frame.heartbeat_ms === "number" && frame.heartbeat_ms > 0) {
          heartbeatMs = frame.heartbeat_ms;
          listen();
        } else if (frame.type === "stream.lagged") {
          await fill();
        } else if (frame.type === "stream.closing") {
          settle({ ok: false, reason: `the server closed the live channel (${frame.reason ?? "no reason given"}); follow again with --after ${last}` });
        } else if (typeof frame.sequence === "number") {
          if (frame.sequence > last + 1) await fill();
          deliver(frame as unknown as ExecutionEvent);
        }
      }).catch((error) => settle({ ok: false, reason: (error as Error)?.message ?? String(error) }));
    };
    // Frames still being handled come first: a close or break may only say the server went away
    // after them, and where to resume is after the last event they handed on.
    const broken = (why: string) => void queue.then(() => settle({ ok: false, reason: `${why}; follow again with --after ${last}` }));
    socket.onerror = () => broken(`the live channel at ${server.url} could not be opened or broke`);
    socket.onclose = (event) => broken(`the live channel closed before ${options.id} ended (code ${event.code}${event.reason ? `, ${event.reason}` : ""})`);
  });
}

/**
 * The server that holds `root` as it is now, without waiting: its lease, one named by the lock
 * alone (`isUnleased`) when it has written none yet (starting: its capability files loading; or
 * frozen while it did, or its .docket/ removed), or null when none holds it. A server that holds
 * the lock and does not answer is no missing one — a run_id run beside it could run twice (a
 * tester's finding). A lock this process can take means no server holds it (the build without a
 * lock, where every take succeeds, cannot tell and lets the run go on). A lease whose pid this
 * process cannot see (a server in another pid namespace, `pidVisible`) is not judged by it: the
 * lock alone says whether its server is there.
 */
export function checkoutHolder(root: string): Lease | null {
  const lease = leasedBy(readLease(root));
  if (!lockHeld(root, lease !== null)) return null;
  const pid = lockHolderPid(root);
  // A lease whose pid is not the lock's holder is a dead server's whose pid another process has
  // now: the holder is a server that has written no lease yet. Named by the lease, a `sleep` was
  // called the frozen server, to be killed (checking tester).
  const stale = lease !== null && typeof pid === "number" && pidVisible(lease) && pid !== lease.pid;
  if (lease !== null && !stale) return lease;
  return { url: NO_ADDRESS, pid: typeof pid === "number" ? pid : 0, root, token: null, started_at: UNLEASED, pid_namespace: null };
}

/** A lease whose process is still there, or null. */
function leasedBy(lease: Lease | null): Lease | null {
  return lease !== null && !leaseHolderGone(lease) ? lease : null;
}

/**
 * The checkout's server for a run that cannot go on without it (a --run-id run: only the server
 * can say whether its run_id was used): `{ server }` once it answers, `{ holder }` when one holds
 * the checkout and does not answer, null when none holds it. A server still starting is waited
 * for: one loading its capability files (the lock held, no lease yet) up to `loadingMs` (what
 * `startingWaitMs` says its files may take), one that has just written its lease until
 * `STARTING_ANSWER_MS` after it did. `docket serve &`
 * then `docket run --run-id …` in one CI step goes through that server, not "does not answer".
 * Waits without blocking the thread, so Ctrl-C still stops the run.
 */
export async function serverOnceStarted(root: string, waiting: (holder: Lease, waitMs: number) => void, loadingMs = STARTING_LOAD_MS, clock: { now(): number; sleep(ms: number): Promise<void> } = REAL_CLOCK): Promise<{ server: ServerClient; lease: Lease } | { holder: Lease; loading: boolean; waitedMs: number } | null> {
  const loadingUntil = clock.now() + loadingMs;
  for (let said = false; ; ) {
    const holder = checkoutHolder(root);
    if (holder === null) return null;
    if (isUnleased(holder)) {
      // Its serve.lock gone, it is a server whose .docket/ was removed (`git clean -fdX`), not
      // one starting: it writes no lease again, and is not waited for.
      if (!existsSync(join(root, ".docket", "serve.lock"))) return { holder, loading: false, waitedMs: 0 };
      if (!said) waiting(holder, loadingMs);
      said = true;
      if (clock.now() >= loadingUntil) return { holder, loading: true, waitedMs: loadingMs };
    } else {
      if (await isLeaseLive(holder)) return { server: serverClient(holder), lease: holder };
      const leasedAt = Date.parse(holder.started_at);
      if (!(clock.now() < leasedAt + STARTING_ANSWER_MS)) return { holder, loading: false, waitedMs: 0 };
    }
    await clock.sleep(STARTING_POLL_MS);
  }
}

const REAL_CLOCK = { now: () => Date.now(), sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)) };
/** How long, at least, a server that holds the checkout and has written no lease (its capability files loading) is waited for by a run that needs it. */
export const STARTING_LOAD_MS = 15_000;
/** How long, at most: a server frozen while it starts is not waited for longer than this. */
const STARTING_LOAD_MAX_MS = 120_000;

/**
 * How long a run waits for a server still loading the capability files of `root`'s capabilities/
 * and of `dirs`: each file may take `loadTimeoutMs` twice (its trial in a worker, then its import),
 * one after the other. At least STARTING_LOAD_MS, at most STARTING_LOAD_MAX_MS. A fixed 15 s gave
 * up on a server loading three files of 4 s each, which takes 25 s (checking tester).
 */
export async function startingWaitMs(root: string, dirs: readonly string[], loadTimeoutMs: number): Promise<number> {
  // Loaded only when a server is found starting: `docket executions` need none of it otherwise.
  const { listCapabilityFiles } = await import("../capability/inspect.ts");
  let files = 0;
  for (const dir of [join(root, "capabilities"), ...dirs]) files += (await listCapabilityFiles(dir).catch(() => null))?.length ?? 0;
  return Math.min(STARTING_LOAD_MAX_MS, Math.max(STARTING_LOAD_MS, files * 2 * loadTimeoutMs));
}
/** How long after writing its lease a server that does not answer yet is taken for one starting (busy with its first work), not a frozen one. */
const STARTING_ANSWER_MS = 5_000;
const STARTING_POLL_MS = 100;

/** The `url` of a holder named from the lock alone (`checkoutHolder`): it has written no lease. */
export const NO_ADDRESS = "(no address: it has written no lease — it is starting, or its .docket/ was removed)";

/** The `started_at` of a holder named from the lock alone (`checkoutHolder`): it has written no lease. */
const UNLEASED = "";

/** A holder that has written no lease yet: a server starting (its capability files loading), not one known to be frozen. */
export function isUnleased(holder: Lease): boolean {
  return holder.started_at === UNLEASED;
}


/**
 * Whether a process holds the checkout's lock. A lock the kernel lists (Linux: /proc/locks) is
 * held, and nothing is touched to know it. The list does not show every lock, though: only those
 * of processes the pid namespace of its /proc sees, so a server outside a container's namespace
 * was taken for none, and a --run-id run there ran twice. Unlisted, the folder's flock is looked
 * at through a shared lock held for an instant (`checkoutFlockHeld`), which a server starting
 * then waits out. Where flock cannot be had, the lock is taken and let go at once.
 */
function lockHeld(root: string, leased: boolean): boolean {
  const holder = lockHolderPid(root);
  if (typeof holder === "number") return true;
  const looked = checkoutFlockHeld(root);
  if (looked !== undefined) return looked;
  if (holder === null) return false;
  // Neither: a checkout where no server ever started is not looked at (nothing
  // is made in a clean checkout), and a .docket/ that is no folder of docket's holds no lock of ours.
  if (!leased && !existsSync(join(root, ".docket", "serve.lock"))) return false;
  try {
    const lock = lockCheckout(root);
    lock?.release();
    return lock === null;
  } catch {
    return false;
  }
}

/** The pid holding an exclusive flock on `path` (Linux: /proc/locks); null when none does; undefined where that cannot be told. */
function lockHolderPid(path: string): number | null | undefined {
  let listed: string;
  let file: { dev: number; ino: number };
  try {
    file = statSync(path);
    listed = readFileSync("/proc/locks", "utf8");
  } catch {
    return undefined;
  }
  // The device as the kernel lists it: major and minor in hex (the usual encoding of st_dev).
  const major = Math.floor(file.dev / 256) % 4096;
  const minor = (file.dev % 256) + (Math.floor(file.dev / 4096) & ~0xff);
  for (const line of listed.split("\n")) {
    // "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF" (a waiter's line has "->" after the number)
    const fields = line.trim().replace(/^\d+:\s+->\s+/, "waiting: ").split(/\s+/);
    const [maj, min, ino] = (fields[5] ?? "").split(":");
    // Only an exclusive lock is a server's: a shared one is a look at the lock, or a run without a
    // server claiming its run_id (checkout-lock.ts holdCheckoutShared), never a server.
    if (fields[0] === "waiting:" || fields[1] !== "FLOCK" || fields[3] !== "WRITE" || Number(ino) !== file.ino) continue;
    if (Number.parseInt(maj ?? "", 16) === major && Number.parseInt(min ?? "", 16) === minor) return Number(fields[4]);
  }
  return null;
}

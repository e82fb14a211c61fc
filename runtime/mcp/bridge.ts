import type { Readable, Writable } from "node:stream";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, isInitializeRequest, isJSONRPCErrorResponse, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type JSONRPCRequest, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { HangUp, StopNow } from "./hang-up.ts";
import { JsonLinesTransport } from "./json-lines-transport.ts";
import { cancelledRequest, PendingRequests, reusedIdAnswer } from "./pending-requests.ts";
import { watchStreamEnds } from "./_stream-ends.ts";
import { earlyRequestAnswer, SessionStart } from "./session-start.ts";
import { failureToolResult } from "./failure-result.ts";
import { buildFailure } from "../execution/failure.ts";
import { newTraceId, requestIdFrom } from "../server/edge-ids.ts";
import { inputShapeProblem } from "../execution/json-depth.ts";

/** How long a server asked to open a new session (reconnect) is waited for. */
const RECONNECT_ANSWER_MS = 10_000;

/** Where the server's MCP endpoint is, and the token it wants. */
export interface ServerAddress {
  url: URL;
  token: string | null;
}

/** Options of {@link bridgeStdioToHttp}. */
export interface BridgeOptions {
  /** The server's MCP endpoint (`<lease url>/mcp`). */
  url: URL;
  /** The lease's token, sent as `Authorization: Bearer` when the server requires one. */
  token: string | null;
  stdin: Readable;
  /** The only writer to stdout (see claimStdout, runtime/cli/stdout-claim.ts). */
  stdout: Writable;
  /** Resolves when the agent hangs up (see untilHangUp). */
  hangUp: Promise<HangUp>;
  /** Resolves when the session is to stop at once, after the end of stdin too (see untilHangUp); absent, never. */
  stopNow?: Promise<StopNow>;
  log: (line: string) => void;
  /**
   * Where the checkout's server is now (its lease), asked when the session is lost or the server
   * does not answer: null when none serves it. Absent: the same address again.
   */
  relocate?: () => Promise<ServerAddress | null>;
}

/**
 * `docket mcp` beside a running server: relays the agent's MCP messages from stdio to the
 * server's Streamable HTTP endpoint and its answers back, unchanged, so that the server's own MCP
 * server answers (its registry, its store: the agent's executions show in the cockpit). Both ends
 * are transports (the SDK's HTTP client; on stdio a line that is no message is answered there and
 * not forwarded); the bridge adds only what a client would do itself: send the negotiated
 * protocol version, keep the agent's order, and end the session when the agent hangs up.
 */
export async function bridgeStdioToHttp(options: BridgeOptions): Promise<void> {
  const { log } = options;
  const initializing = new Set<RequestId>();
  const pending = new PendingRequests();
  const session = new SessionStart();
  let target: ServerAddress = { url: options.url, token: options.token };
  /** The agent's initialize request, and whether it said notifications/initialized: what a new session is opened with. */
  let agentInitialize: JSONRPCRequest | null = null;
  let agentInitialized = false;
  /**
   * What the server answered the initialize of the session open now: a later initialize of the
   * agent is answered with it, as a standalone docket mcp answers one (the SDK's server answers a
   * second initialize; its HTTP transport refuses one on an open session, 400).
   */
  let sessionResult: Record<string, unknown> | null = null;
  /** Told when a request of the agent is answered: an initialize holds the next message until then (see forward). */
  const onAnswer = new Map<RequestId, () => void>();
  /** Answers to the initialize requests the bridge itself sends, when it opens a session again. */
  const ownRequests = new Map<RequestId, (message: JSONRPCMessage) => void>();
  let ownSequence = 0;
  /** The agent's requests read and not yet sent on: one cancelled now is never sent (see onmessage). */
  const unsent = new Set<RequestId>();
  /** Requests sent on and then cancelled by the agent: an answer the server gives them anyway is not relayed. */
  const cancelled = new Set<RequestId>();
  /** The docket_execution_start requests in flight: one cancelled and answered anyway started an execution nobody knows of. */
  const starts = new Set<RequestId>();
  /** Requests the bridge answered itself, the server's stream having ended without their answer: one the server still gives is not a second answer. */
  const gaveUp = new Set<RequestId>();
  const answer = async (message: JSONRPCMessage) => {
    const id = responseId(message);
    if (id !== undefined && gaveUp.delete(id)) return;
    if (id !== undefined) {
      onAnswer.get(id)?.();
      onAnswer.delete(id);
      starts.delete(id);
      // MCP: a cancelled request is not answered; the agent gave up on it and may reuse its id.
      if (cancelled.delete(id)) return;
    }
    // Answered from here on, however long the agent's stdout takes it: a stream that ends while
    // the answer waits for stdout (an agent that reads slowly) leaves no call unanswered to say so.
    pending.answered(message);
    await downstream.send(message);
  };
  const said = new Set<string>();
  const sayOnce = (line: string) => {
    if (said.has(line)) return;
    said.add(line);
    log(line);
  };
  /** docket mcp is stopping: the answer streams its own close ends are not the server's doing. */
  let stopping = false;
  /**
   * An answer stream that ended before its answer (the server stopped, crashed or restarted under
   * a call): the agent is told, instead of waiting forever. Told after every message the stream
   * held was handed on (_stream-ends.ts), so an answer still being parsed is never taken for one
   * that did not come.
   */
  const streamEnded = (ids: RequestId[], error: unknown) => {
    const origin = target.url.origin;
    // docket mcp itself stopping (a signal, the agent gone) ends its own answer streams: no fault
    // of the server's to report, and nobody to answer (MCP/CLI tester, session 50).
    if (stopping) return;
    for (const id of ids) {
      // A cancelled request whose answer did not come (the server took the cancel) is done with.
      cancelled.delete(id);
      starts.delete(id);
      onAnswer.get(id)?.();
      onAnswer.delete(id);
      if (!pending.has(id)) continue;
      // The server went away under a call: whoever listens at its address next is not trusted
      // with the token until the lease says a server of this checkout is there (reconnect).
      suspect = true;
      const why = error ? ` (${reasonOf(error)})` : "";
      sayOnce(`docket mcp: the docket server at ${origin} closed a call's answer before it was given`);
      const message = `The docket server at ${origin} stopped answering this request before its answer came${why}: it stopped, crashed or restarted. A call that starts work may have run: once a server runs again, find it with docket_executions or \`docket executions list\` before you retry.`;
      answer({ jsonrpc: "2.0", id, error: { code: ErrorCode.ConnectionClosed, message } }).catch(() => undefined);
      gaveUp.add(id);
    }
  };
  const streamEnds = watchStreamEnds(streamEnded);

  /** The transport of one session with the server at `address`; its messages go to the agent. */
  const connect = (address: ServerAddress): StreamableHTTPClientTransport => {
    const transport = new StreamableHTTPClientTransport(address.url, {
      requestInit: { headers: address.token ? { Authorization: `Bearer ${address.token}` } : {} },
      fetch: streamEnds.fetch,
    });
    transport.onmessage = (message) => {
      if (streamEnds.ends(message)) return;
      const own = "id" in message && message.id !== undefined && !("method" in message) ? ownRequests.get(message.id) : undefined;
      if (own) return own(message);
      const id = responseId(message);
      if (id !== undefined && cancelled.has(id) && starts.has(id)) cancelStarted(message);
      if (isJSONRPCResultResponse(message) && initializing.delete(message.id)) {
        // What the SDK client does after initialize: later requests carry MCP-Protocol-Version.
        const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
        if (typeof version === "string") transport.setProtocolVersion(version);
        sessionResult = message.result;
      }
      answer(message).catch((error) => sayOnce(`docket mcp: could not write to stdout: ${(error as Error)?.message ?? String(error)}`));
    };
    transport.onerror = (error) => {
      // Everything else the SDK reports here is the connection failing (its event stream cut, its
      // retries used up, a request that could not be sent), in the runtime's words ("pass
      // `verbose: true` to fetch()"): a request it costs is answered, and said, by refuse or
      // streamEnded, and the next one opens a new session (reconnect), which says so. Only a
      // message that is no MCP message is news of its own.
      if (error instanceof SyntaxError || error?.name === "ZodError") sayOnce(`docket mcp: the docket server at ${address.url.origin} sent something that is no MCP message; it was dropped.`);
    };
    return transport;
  };
  let upstream = connect(target);
  /** The server went away under a call: the next message checks the lease first (forward). */
  let suspect = false;
  const downstream = new JsonLinesTransport(options.stdin, options.stdout);

  /**
   * A start the agent cancelled that the server answered anyway (the cancel came after its
   * answer was on its way): the agent never learns the execution's id, so the bridge cancels it,
   * as the server does with a start cancelled before its answer (docs: README, "MCP").
   */
  const cancelStarted = (message: JSONRPCMessage) => {
    const execution = isJSONRPCResultResponse(message) ? (message.result.structuredContent as { execution?: { id?: unknown } } | undefined)?.execution : undefined;
    if (typeof execution?.id !== "string") return;
    const id = `docket-mcp-cancel-${++ownSequence}`;
    ownRequests.set(id, () => ownRequests.delete(id));
    const call: JSONRPCRequest = { jsonrpc: "2.0", id, method: "tools/call", params: { name: "docket_execution_cancel", arguments: { id: execution.id } } };
    upstream.send(call).catch((error) => {
      ownRequests.delete(id);
      sayOnce(`docket mcp: could not cancel ${execution.id}, started by a request the agent cancelled: ${(error as Error)?.message ?? String(error)}`);
    });
  };

  /**
   * A new session in place of one the server lost (it restarted: every request then answers 404
   * "session not found", which an agent on stdio cannot act on), or with the server the lease now
   * names (restarted on another port). Opened with the agent's own initialize, as the agent would;
   * the agent is then told the tools may have changed. False when no server answers.
   */
  const reconnect = async (): Promise<boolean> => {
    if (!agentInitialize) return false;
    const address = options.relocate ? await options.relocate() : target;
    if (!address) return false;
    const transport = connect(address);
    const id = `docket-mcp-session-${++ownSequence}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answered = new Promise<JSONRPCMessage | null>((resolve) => {
      ownRequests.set(id, resolve);
      timer = setTimeout(() => resolve(null), RECONNECT_ANSWER_MS);
    });
    try {
      await transport.start();
      await transport.send({ ...agentInitialize, id });
      const result = await answered;
      if (!result || !isJSONRPCResultResponse(result)) throw new Error("the server did not accept the initialize");
      const version = (result.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === "string") transport.setProtocolVersion(version);
      sessionResult = result.result;
      if (agentInitialized) await transport.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    } catch {
      await transport.close().catch(() => undefined);
      return false;
    } finally {
      clearTimeout(timer);
      ownRequests.delete(id);
    }
    await upstream.close().catch(() => undefined);
    upstream = transport;
    target = address;
    // A server also ends the session it kept longest unused past its mcp_sessions (other agents' sessions count).
    log(`docket mcp: the docket server's session was lost (it restarted, or it ended this session for others: it keeps at most --mcp-sessions); a new session is open at ${address.url.origin}.`);
    // Another server may serve other tools: the agent lists them again.
    await downstream.send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" }).catch(() => undefined);
    return true;
  };

  /**
   * A request the server could not be asked: the agent gets an error instead of waiting forever.
   * What the server answered with an error status (a body over its input limit: 413), and what
   * could not even be written (arguments nested too deep to serialize), are the request's fault,
   * said so; only a server that does not answer is one to restart.
   */
  const refuse = async (message: JSONRPCMessage, error: unknown) => {
    const reason = reasonOf(error);
    const status = error instanceof StreamableHTTPError ? error.code : undefined;
    const unsendable = error instanceof RangeError;
    const theRequest = unsendable || (status !== undefined && status >= 400 && status < 500);
    if (!theRequest) sayOnce(`docket mcp: the docket server at ${target.url.origin} did not take a message: ${reason}`);
    if (!isJSONRPCRequest(message)) return;
    if (status === 413 && message.method === "tools/call") {
      // A call too large for the server is its input's fault, as a standalone docket mcp says it:
      // a tool result the agent can act on, not a protocol error.
      const name = String((message.params as { name?: unknown } | undefined)?.name ?? "the tool");
      const failure = buildFailure({
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot call ${name}: the request is larger than the docket server takes (its input_bytes limit, 8 MiB by default).`,
        suggestion: "Send a smaller input: pass large data as a file in the checkout and its path.",
        context: { reason: "too_large" },
        request_id: requestIdFrom(undefined),
        trace_id: newTraceId(),
      });
      await answer({ jsonrpc: "2.0", id: message.id, result: failureToolResult(failure) }).catch(() => undefined);
      return;
    }
    const said = unsendable
      ? `The request could not be sent to the docket server: its arguments nest too deeply to be written as JSON (${reason}). Send a flatter input (docket refuses more than 128 levels).`
      : theRequest
        ? `The docket server refused the request (HTTP ${status}): ${status === 413 ? "it is larger than the server takes (its input_bytes limit, 8 MiB by default)" : reason}.`
        : `The docket server at ${target.url.origin} did not answer: ${reason}. Start docket serve again (docket mcp then follows it), or restart docket mcp.`;
    await answer({ jsonrpc: "2.0", id: message.id, error: { code: theRequest ? ErrorCode.InvalidRequest : ErrorCode.ConnectionClosed, message: said } }).catch(() => undefined);
  };

  /**
   * One of the agent's messages to the server. A message the server never took because its
   * session is gone (404) or it does not answer at all is sent again once, on a new session
   * (reconnect): it was not handled, so sending it again runs nothing twice.
   */
  const forward = async (message: JSONRPCMessage) => {
    const initialize = isJSONRPCRequest(message) && isInitializeRequest(message);
    if (initialize && sessionResult) {
      initializing.delete(message.id);
      return answer({ jsonrpc: "2.0", id: message.id, result: sessionResult }).catch(() => undefined);
    }
    // Nothing follows an initialize until it is answered (MCP: an agent waits for it anyway), so
    // that an initialize right behind it is answered with its result, not sent to the server.
    const answered = initialize ? new Promise<void>((resolve) => onAnswer.set(message.id, resolve)) : null;
    if (suspect && !initialize) {
      if (!(await reconnect())) return refuse(message, new Error(NO_SERVER));
      suspect = false;
    }
    try {
      await upstream.send(message);
      await answered;
    } catch (error) {
      const lost = error instanceof StreamableHTTPError ? error.code === 404 : !(error instanceof RangeError);
      if (!lost || initialize) return refuse(message, error);
      if (!(await reconnect())) {
        suspect = true;
        return refuse(message, error instanceof StreamableHTTPError ? new Error(`its session is gone (HTTP ${error.code}) and ${NO_SERVER}`) : error);
      }
      await upstream.send(message).catch((again) => refuse(message, again));
    }
  };

  // One message at a time, in the agent's order, each sent once the one before it was taken —
  // but a cancel: it is sent at once, not behind the answer of the request it cancels (a start
  // is answered in a few milliseconds, and a cancel that came after its answer cancels nothing).
  let queue = Promise.resolve();
  downstream.onmessage = (message) => {
    // Never sent on (the server would see two requests of one id): answered here, and the request
    // waiting with that id still waits.
    if (pending.reused(message)) {
      downstream.send(reusedIdAnswer(message, pending)).catch((error) => sayOnce(`docket mcp: ${(error as Error).message}`));
      return;
    }
    // Before initialize there is no session with the server to send a request in: refused as a
    // standalone docket mcp refuses it. A ping is answered here, before and after: it asks whether
    // this process is alive, and sent on it failed with the server gone, or went unanswered with
    // it frozen, while this process was there to answer (MCP/CLI tester, session 44).
    if (session.early(message) || (isJSONRPCRequest(message) && message.method === "ping")) {
      const said = message.method === "ping" ? { jsonrpc: "2.0" as const, id: message.id, result: {} } : earlyRequestAnswer(message);
      downstream.send(said).catch((error) => sayOnce(`docket mcp: ${(error as Error).message}`));
      return;
    }
    // A cancel of no request in flight is not sent on: MCP says to ignore it.
    if (!pending.received(message)) return;
    const cancelledId = cancelledRequest(message);
    if (cancelledId !== undefined) {
      // Not sent yet (its cancel came in the same write, say): it is never sent, so nothing of it runs.
      if (unsent.delete(cancelledId)) {
        starts.delete(cancelledId);
        return;
      }
      cancelled.add(cancelledId);
      upstream.send(message).catch((error) => refuse(message, error));
      return;
    }
    // JSON has no number past ±1.8e308 (`1e400` parses as Infinity), and the request is written
    // again to be sent on: the server would read null in its place, and a write run with it.
    const unwritable = isJSONRPCRequest(message) ? notFiniteAnswer(message) : null;
    if (unwritable !== null) {
      pending.answered(unwritable);
      downstream.send(unwritable).catch((error) => sayOnce(`docket mcp: ${(error as Error).message}`));
      return;
    }
    if (isJSONRPCRequest(message)) {
      // An id answered by the bridge itself, used again: the answer to come is this request's.
      gaveUp.delete(message.id);
      unsent.add(message.id);
      if (message.method === "tools/call" && (message.params as { name?: unknown } | undefined)?.name === "docket_execution_start") starts.add(message.id);
    }
    if (isJSONRPCRequest(message) && isInitializeRequest(message)) {
      initializing.add(message.id);
      agentInitialize = message;
    }
    if (isJSONRPCNotification(message) && message.method === "notifications/initialized") agentInitialized = true;
    queue = queue.then(() => {
      // Stopping: what is still queued is sent nowhere (nobody is left to answer, or stop was asked).
      if (stopping) return;
      if (isJSONRPCRequest(message) && !unsent.delete(message.id)) return;
      return forward(message);
    });
  };
  downstream.onerror = (error) => sayOnce(`docket mcp: ${error.message}`);

  const stopNow: Promise<StopNow> = options.stopNow ?? new Promise<StopNow>(() => undefined);
  void options.hangUp.then((why) => {
    if (why !== "stdin") stopping = true;
  });
  void stopNow.then(() => (stopping = true));
  await upstream.start();
  await downstream.start();
  // At the end of stdin the requests already read are answered first — while a server of the
  // checkout answers (a frozen or dead one would hold them for ever) and until a signal comes or
  // the agent closes its stdout: then it stops at once, as before the end (a backlog of calls
  // was forwarded to the last with nobody to answer: MCP checking tester, session 50).
  let ending: "answered" | "gone" | "stop" = "stop";
  if ((await options.hangUp) === "stdin") {
    // Lines held back at the end of stdin are read as stdout takes the answers: each is waited for.
    const answeredAll = downstream.allRead().then(() => pending.settled());
    const over = () => Promise.race([answeredAll.then(() => "answered" as const), stopNow.then(() => "stop" as const)]);
    ending = await Promise.race([over(), serverGone().then(() => "gone" as const)]);
    // The server answers no more: what waits is answered here. That makes room for the requests
    // still held back (see JsonLinesTransport's bound), read and answered in turn until all is.
    while (ending === "gone") {
      for (const id of pending.waiting()) {
        const message = `The docket server at ${target.url.origin} stopped answering (frozen or gone) and stdin has ended, so docket mcp stops waiting for this request. A call that starts work may have run: find it with \`docket executions list\` once a server runs again.`;
        // Not sent on if still queued; an answer the server gives it after all is not a second one.
        unsent.delete(id);
        await answer({ jsonrpc: "2.0", id, error: { code: ErrorCode.ConnectionClosed, message } }).catch(() => undefined);
        gaveUp.add(id);
      }
      ending = await Promise.race([over(), new Promise<"gone">((resolve) => setTimeout(() => resolve("gone"), GONE_LOOK_MS))]);
    }
    if (ending === "answered") {
      await bounded(queue);
      // Ends the session on the server; a server already gone (or frozen) has nothing to end.
      if (!stopping) await bounded(upstream.terminateSession().catch(() => undefined));
    }
  }
  if (ending === "stop" && !suspect) {
    // Stopped at once (a signal, the agent gone), the session on the server is ended as at the
    // end of stdin, bounded more tightly: the calls it still runs for nobody are cancelled there.
    stopping = true;
    await bounded(upstream.terminateSession().catch(() => undefined), STOP_SESSION_END_MS);
  }
  stopping = true;
  await upstream.close().catch(() => undefined);
  await downstream.close();

  /** Resolves once the lease has named no answering server at two looks in a row (a frozen one does not answer). */
  async function serverGone(): Promise<void> {
    if (!options.relocate) return new Promise<void>(() => undefined);
    for (let misses = 0; misses < 2; ) {
      await new Promise((resolve) => setTimeout(resolve, LIVENESS_MS));
      misses = (await options.relocate()) === null ? misses + 1 : 0;
    }
  }
}

/**
 * The answer to a tool call whose arguments hold a number JSON cannot hold, which the bridge
 * cannot send on as it came (written again, Infinity is null), or null: refused as a standalone
 * docket mcp and the server refuse it, a tool call's failure (`invalid_input`, `not_finite`).
 */
function notFiniteAnswer(request: JSONRPCRequest): JSONRPCMessage | null {
  const params = request.params as { name?: unknown; arguments?: unknown } | undefined;
  // Only a tool call's arguments reach a handler as data: anywhere else (a member the server
  // ignores, arguments that are no object and are refused as such) it changes nothing, as it
  // changes nothing for a standalone docket mcp or the server (checking tester).
  const args = request.method === "tools/call" ? params?.arguments : undefined;
  if (args === null || typeof args !== "object" || Array.isArray(args)) return null;
  const shape = inputShapeProblem(args, Number.POSITIVE_INFINITY);
  if (shape?.reason !== "not_finite") return null;
  const where = `${shape.path} is a number too large for JSON to hold (it reads as ${shape.value})`;
  const failure = buildFailure({
    error_code: "invalid_input",
    stage: "validate",
    message: `Cannot call ${String(params!.name)}: ${where}.`,
    suggestion: "Send a number within ±1.8e308, or the value as a string if it must be that large.",
    context: { reason: "not_finite", path: shape.path },
    request_id: requestIdFrom(undefined),
    trace_id: newTraceId(),
  });
  return { jsonrpc: "2.0", id: request.id, result: failureToolResult(failure) };
}

/** The id a response answers, or undefined for a request or a notification. */
function responseId(message: JSONRPCMessage): RequestId | undefined {
  return isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message) ? message.id : undefined;
}

/** The runtime's advice appended to a failed fetch's message: about debugging fetch, not about docket. */
const RUNTIME_HINTS = [/\s*For more information, pass `verbose: true` in the second argument to fetch\(\)\.?/g, /\s*Is the computer able to access the url\?/g];

/**
 * Why a message could not be sent or answered, as a few words of docket's line: a refused or cut
 * connection named as such, the runtime's fetch hints left out, and bounded (an answer that is
 * no JSON-RPC message makes the SDK throw its whole schema report).
 */
function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === "ConnectionRefused" || code === "ECONNREFUSED") return "nothing answers at its address";
  if (code === "ECONNRESET" || code === "ConnectionClosed") return "the connection was closed";
  let text = String((error as Error | null)?.message ?? error);
  for (const hint of RUNTIME_HINTS) text = text.replace(hint, "");
  text = text.replace(/\s+/g, " ").trim().replace(/\.$/, "");
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/** What an agent is told when no docket server serves the checkout now. */
const NO_SERVER = "no docket server serves the checkout now (its lease names none that answers)";

/** How often, once stdin has ended with requests unanswered, the lease is asked whether a server still answers. */
const LIVENESS_MS = 2_000;

/** How often, once the server is found gone after the end of stdin, the requests read since are answered. */
const GONE_LOOK_MS = 50;

/** How long the server is given to end the session when docket mcp stops at once (a signal, the agent gone). */
const STOP_SESSION_END_MS = 500;

/** What the end of the bridge waits for at most: a frozen server holds a send or the session's end for ever. */
function bounded(work: Promise<unknown>, ms = 2_000): Promise<unknown> {
  return Promise.race([work, new Promise((resolve) => setTimeout(resolve, ms).unref?.())]);
}

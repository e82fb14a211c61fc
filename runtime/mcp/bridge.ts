import type { Readable, Writable } from "node:stream";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, isInitializeRequest, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { HangUp } from "./hang-up.ts";
import { JsonLinesTransport } from "./json-lines-transport.ts";
import { PendingRequests } from "./pending-requests.ts";
import { fetchTellingStreamEnds } from "./_stream-ends.ts";

/** How long an answer stream that ended is given for its last message to be parsed and relayed. */
const STREAM_END_GRACE_MS = 200;

/** Options of {@link bridgeStdioToHttp}. */
export interface BridgeOptions {
  /** The server's MCP endpoint (`<lease url>/mcp`). */
  url: URL;
  /** The lease's token, sent as `Authorization: Bearer` when the server requires one. */
  token: string | null;
  stdin: Readable;
  /** The only writer to stdout (see claimStdout). */
  stdout: Writable;
  /** Resolves when the agent hangs up (see untilHangUp). */
  hangUp: Promise<HangUp>;
  log: (line: string) => void;
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
  const answer = async (message: JSONRPCMessage) => {
    await downstream.send(message);
    pending.answered(message);
  };
  /**
   * An answer stream that ended before its answer (the server stopped, crashed or restarted under
   * a call): the agent is told, instead of waiting forever. The SDK may still be parsing the
   * stream's last bytes when it ends, so its answer is given a moment to arrive first.
   */
  const streamEnded = (ids: RequestId[], error: unknown) => {
    setTimeout(() => {
      for (const id of ids) {
        if (!pending.has(id)) continue;
        const why = error ? ` (${String((error as Error)?.message ?? error).replace(/\.$/, "")})` : "";
        sayOnce(`docket mcp: the docket server at ${options.url.origin} closed a call's answer before it was given`);
        const message = `The docket server at ${options.url.origin} stopped answering this request before its answer came${why}: it stopped, crashed or restarted. A call that starts work may have run: once a server runs again, find it with docket_executions_list or \`docket executions list\` before you retry.`;
        answer({ jsonrpc: "2.0", id, error: { code: ErrorCode.ConnectionClosed, message } }).catch(() => undefined);
      }
    }, STREAM_END_GRACE_MS);
  };
  const upstream = new StreamableHTTPClientTransport(options.url, {
    requestInit: { headers: options.token ? { Authorization: `Bearer ${options.token}` } : {} },
    fetch: fetchTellingStreamEnds(streamEnded),
  });
  const downstream = new JsonLinesTransport(options.stdin, options.stdout);
  const said = new Set<string>();
  const sayOnce = (line: string) => {
    if (said.has(line)) return;
    said.add(line);
    log(line);
  };

  /**
   * A request the server could not be asked: the agent gets an error instead of waiting forever.
   * What the server answered with an error status (a body over its input limit: 413), and what
   * could not even be written (arguments nested too deep to serialize), are the request's fault,
   * said so; only a server that does not answer is one to restart.
   */
  const refuse = async (message: JSONRPCMessage, error: unknown) => {
    const reason = ((error as Error)?.message ?? String(error)).replace(/\.$/, "");
    const status = error instanceof StreamableHTTPError ? error.code : undefined;
    const unsendable = error instanceof RangeError;
    const theRequest = unsendable || (status !== undefined && status >= 400 && status < 500);
    if (!theRequest) sayOnce(`docket mcp: the docket server at ${options.url.origin} did not take a message: ${reason}`);
    if (!isJSONRPCRequest(message)) return;
    const said = unsendable
      ? `The request could not be sent to the docket server: its arguments nest too deeply to be written as JSON (${reason}). Send a flatter input (docket refuses more than 128 levels).`
      : theRequest
        ? `The docket server refused the request (HTTP ${status}): ${status === 413 ? "it is larger than the server takes (its input_bytes limit, 8 MiB by default)" : reason}.`
        : `The docket server at ${options.url.origin} did not answer: ${reason}. Restart docket mcp once it runs again.`;
    await answer({ jsonrpc: "2.0", id: message.id, error: { code: theRequest ? ErrorCode.InvalidRequest : ErrorCode.ConnectionClosed, message: said } }).catch(() => undefined);
  };

  // One message at a time, in the agent's order: a cancel must not overtake the request it cancels.
  let queue = Promise.resolve();
  downstream.onmessage = (message) => {
    pending.received(message);
    if (isJSONRPCRequest(message) && isInitializeRequest(message)) initializing.add(message.id);
    queue = queue.then(() => upstream.send(message).catch((error) => refuse(message, error)));
  };
  upstream.onmessage = (message) => {
    if (isJSONRPCResultResponse(message) && initializing.delete(message.id)) {
      // What the SDK client does after initialize: later requests carry MCP-Protocol-Version.
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === "string") upstream.setProtocolVersion(version);
    }
    answer(message).catch((error) => sayOnce(`docket mcp: could not write to stdout: ${(error as Error)?.message ?? String(error)}`));
  };
  upstream.onerror = (error) => sayOnce(`docket mcp: ${error.message}`);
  downstream.onerror = (error) => sayOnce(`docket mcp: ${error.message}`);

  await upstream.start();
  await downstream.start();
  // At the end of stdin the requests already read are answered first; a signal stops at once.
  if ((await options.hangUp) === "stdin") await pending.settled();
  await queue;
  // Ends the session on the server; a server already gone has nothing to end.
  await upstream.terminateSession().catch(() => undefined);
  await upstream.close();
  await downstream.close();
}

import type { Readable, Writable } from "node:stream";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import { isJSONRPCErrorResponse, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type MessageExtraInfo, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { ExecutionPlane } from "../execution/plane.ts";
import type { HangUp, StopNow } from "./hang-up.ts";
import { JsonLinesTransport } from "./json-lines-transport.ts";
import { PendingRequests, reusedIdAnswer } from "./pending-requests.ts";
import { earlyRequestAnswer, SessionStart } from "./session-start.ts";
import { createDocketMcpServer } from "./server.ts";

/** Options of {@link serveMcpOverStdio}. */
export interface StdioServeOptions {
  stdin: Readable;
  /** The only writer to stdout (see claimStdout, runtime/cli/stdout-claim.ts). */
  stdout: Writable;
  /** Resolves when the agent hangs up (see untilHangUp). */
  hangUp: Promise<HangUp>;
  /** Resolves when the session is to stop at once, after the end of stdin too (see untilHangUp); absent, never. */
  stopNow?: Promise<StopNow>;
  log: (line: string) => void;
}

/**
 * Serves one plane's MCP server on stdio until the agent hangs up: at a signal at once, at the
 * end of stdin once the requests already read are answered — unless a signal comes or the agent
 * closes its stdout meanwhile, which stops it at once then too.
 */
export async function serveMcpOverStdio(plane: ExecutionPlane, options: StdioServeOptions): Promise<void> {
  const server = createDocketMcpServer(plane, { log: options.log });
  const pending = new PendingRequests();
  const lines = new JsonLinesTransport(options.stdin, options.stdout);
  const transport = new ObservedTransport(lines, pending);
  transport.onerror = (error) => options.log(`docket mcp: ${error.message}`);
  await server.connect(transport);
  // Lines held back at the end of stdin are read as stdout takes the answers: each is waited for.
  // A signal or stdout closed meanwhile stops that at once: twenty calls read before the end ran
  // to the last with nobody to answer (MCP checking tester, session 50).
  if ((await options.hangUp) === "stdin") {
    const answeredAll = lines.allRead().then(() => pending.settled());
    await (options.stopNow ? Promise.race([answeredAll, options.stopNow]) : answeredAll);
  }
  await server.close();
}

/** The stdio transport, with every message in and out shown to the pending requests (which drop a cancel of no request in flight). */
class ObservedTransport implements Transport {
  private readonly session = new SessionStart();
  /**
   * The first initialize's id, and its result once sent (null: it was refused): what a later
   * initialize of the agent is answered, even one sent before that answer (a session is
   * negotiated once).
   */
  private initializeId: RequestId | null = null;
  private firstAnswer: Promise<Record<string, unknown> | null> | null = null;
  private settleFirst: ((result: Record<string, unknown> | null) => void) | null = null;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  constructor(
    private readonly inner: Transport,
    private readonly pending: PendingRequests,
  ) {
    inner.onmessage = (message, extra) => {
      const initialize = isJSONRPCRequest(message) && message.method === "initialize";
      // Answered here, not through send: the request waiting with that id still waits.
      if (pending.reused(message)) void inner.send(reusedIdAnswer(message, pending)).catch((error) => this.onerror?.(error as Error));
      // The session is negotiated once: a later initialize gets the first one's answer, as over HTTP and forwarding.
      else if (initialize && this.firstAnswer !== null) {
        pending.received(message);
        void this.firstAnswer
          .then((result) => (result !== null ? this.send({ jsonrpc: "2.0", id: message.id, result }) : this.onmessage?.(message, extra)))
          .catch((error) => this.onerror?.(error as Error));
      }
      // Never run: nothing of the session exists yet (over HTTP and forwarding, none would run it).
      else if (this.session.early(message)) void inner.send(earlyRequestAnswer(message)).catch((error) => this.onerror?.(error as Error));
      else if (pending.received(message)) {
        if (initialize) {
          this.initializeId = message.id;
          this.firstAnswer = new Promise((resolve) => (this.settleFirst = resolve));
        }
        this.onmessage?.(message, extra);
      }
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.settleFirst !== null && (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id === this.initializeId) {
      this.settleFirst(isJSONRPCResultResponse(message) ? message.result : null);
      this.settleFirst = null;
    }
    await this.inner.send(message, options);
    this.pending.answered(message);
  }
}

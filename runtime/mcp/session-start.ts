import { ErrorCode, isJSONRPCRequest, type JSONRPCErrorResponse, type JSONRPCMessage, type JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";

/**
 * Whether the agent began its session: MCP's lifecycle starts with `initialize`, and an agent
 * sends nothing but `ping` before it. A request sent earlier is answered {@link earlyRequestAnswer}
 * and not run, on stdio as over HTTP (where the transport has no session to run it in) and
 * whether `docket mcp` stands alone or forwards to a server (docs: README, "MCP").
 */
export class SessionStart {
  private begun = false;

  /** Sees an agent's message; true for a request that came before any initialize (a ping excepted). */
  early(message: JSONRPCMessage): message is JSONRPCRequest {
    if (!isJSONRPCRequest(message)) return false;
    if (message.method === "initialize") this.begun = true;
    return !this.begun && message.method !== "ping";
  }

  /** True once an initialize was seen. */
  started(): boolean {
    return this.begun;
  }
}

/** The answer to a request sent before initialize: -32600, naming it and what to send first. */
export function earlyRequestAnswer(request: JSONRPCRequest): JSONRPCErrorResponse {
  return {
    jsonrpc: "2.0",
    id: request.id,
    error: {
      code: ErrorCode.InvalidRequest,
      message: `Invalid Request: ${JSON.stringify(request.method.slice(0, 100))} came before initialize. An MCP session begins with an initialize request (then notifications/initialized): send it first, then this request again.`,
    },
  };
}

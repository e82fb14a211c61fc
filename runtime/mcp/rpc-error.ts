import { McpError } from "@modelcontextprotocol/sdk/types.js";

/**
 * A JSON-RPC error for the MCP server to answer with, its message as written. The SDK's McpError
 * puts "MCP error <code>: " before the message it sends, and the SDK's client puts the same
 * again before what it receives: agents showed "MCP error -32602: MCP error -32602: No tool …".
 */
export function rpcError(code: number, message: string, data?: unknown): McpError {
  const error = new McpError(code, message, data);
  error.message = message;
  return error;
}

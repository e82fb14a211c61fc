import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import type { ExecutionPlane } from "../execution/plane.ts";
import { DOCKET_VERSION } from "../version.ts";
import { checkedRequest, keepSentArguments } from "./_checked-request.ts";
import { rpcError } from "./rpc-error.ts";
import { methodNotFoundMessage } from "./_answered-methods.ts";
import { failureJsonSchema } from "./_schemas.ts";
import { callTool } from "./call-tool.ts";
import { mcpEdge, type McpRequestFacts } from "./edge.ts";
import { EXECUTION_TEMPLATE, listResources, readResource } from "./resources.ts";
import { listTools } from "./tools.ts";

/** Options of {@link createDocketMcpServer}. */
export interface DocketMcpServerOptions {
  /** Where stacks of unexpected errors go (stderr); never a client. */
  log?: (line: string) => void;
  /**
   * The signal of the HTTP request that carried a request, aborted when its client dropped it
   * before the answer (Streamable HTTP); absent on stdio, where only the connection closes.
   */
  callerLeft?: (id: RequestId) => AbortSignal | undefined;
}

/** What an agent reads first: how the tools fit together, in a few sentences. */
const INSTRUCTIONS = [
  "docket serves the capabilities of one checkout. Each work capability is a tool (files.digest is files_digest) that answers directly.",
  "To run one as an execution you can follow, cancel and read later, call docket_execution_start with its id; pass wait: true to get its terminal snapshot (and progress notifications with a progressToken), or follow it with docket_execution_events using after = the last sequence seen.",
  "A failure is a tool result with isError: true whose structured content is a descriptor: error_code, message, suggestion, retryability and outcome_certainty say what to do next.",
].join(" ");

/** What a listing takes, said when its params do not fit. */
const LISTING_PARAMS = "Send no params: docket answers a listing whole, with no nextCursor.";

/**
 * A listing's answer, refusing a cursor: docket answers every listing in one page, with no
 * nextCursor, so a cursor is none it gave, and MCP says an invalid cursor is -32602 (a client
 * that sent one would otherwise take the first page for the next).
 */
function whole<T>(request: { method: string; params?: { cursor?: unknown } }, list: () => T): T {
  if (request.params?.cursor !== undefined) throw rpcError(ErrorCode.InvalidParams, `Invalid params of ${request.method}: params.cursor is no cursor docket gave. ${LISTING_PARAMS}`);
  return list();
}

/**
 * An MCP server over one execution plane, with the low-level SDK `Server`: the tools are read from
 * the registry on each request with the capabilities' own JSON Schemas (McpServer wants zod), and
 * every answer comes from the plane and its store. One per connection (an HTTP session, stdio).
 */
export function createDocketMcpServer(plane: ExecutionPlane, options: DocketMcpServerOptions = {}): Server {
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const server = new Server(
    { name: "docket", title: "docket", version: DOCKET_VERSION },
    { capabilities: { tools: { listChanged: plane.onCapabilitiesChanged !== undefined }, resources: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  let closed = false;
  // A live reload changes the tools: the client is told to list them again (notifications/tools/list_changed).
  const unsubscribe = plane.onCapabilitiesChanged?.(() => {
    if (!closed) server.sendToolListChanged().catch(() => undefined);
  });
  server.onclose = () => {
    closed = true;
    unsubscribe?.();
  };
  // Derived from the protocol's definition once per server rather than on every tools/list.
  const failureSchema = failureJsonSchema();
  const edgeOf = (request: McpRequestFacts) => mcpEdge(server.getClientVersion()?.name, request);

  // Params that do not fit are -32602 with what is wrong, not the SDK's -32603 (_checked-request.ts).
  server.setRequestHandler(checkedRequest(ListToolsRequestSchema, LISTING_PARAMS), (request) => whole(request, () => ({ tools: listTools(plane, failureSchema) })));
  server.setRequestHandler(checkedRequest(CallToolRequestSchema, 'Send params as {"name": "<tool>", "arguments": {…}}: tools/list names the tools and the arguments each takes.', keepSentArguments), (request, extra) =>
    callTool(plane, request.params.name, request.params.arguments, {
      edge: edgeOf({ requestId: extra.requestId, _meta: request.params._meta }),
      signal: extra.signal,
      callerLeft: options.callerLeft?.(extra.requestId),
      progressToken: request.params._meta?.progressToken,
      sendProgress: (params) => extra.sendNotification({ method: "notifications/progress", params }),
      connectionClosed: () => closed,
      log,
    }),
  );
  server.setRequestHandler(checkedRequest(ListResourcesRequestSchema, LISTING_PARAMS), (request) => whole(request, () => ({ resources: listResources() })));
  server.setRequestHandler(checkedRequest(ListResourceTemplatesRequestSchema, LISTING_PARAMS), (request) => whole(request, () => ({ resourceTemplates: [EXECUTION_TEMPLATE] })));
  server.setRequestHandler(checkedRequest(ReadResourceRequestSchema, 'Send params as {"uri": "docket://executions/<id>"}: resources/list and resources/templates/list name the resources.'), (request, extra) =>
    readResource(plane, request.params.uri, edgeOf({ requestId: extra.requestId, _meta: request.params._meta }), log),
  );
  // A method no handler above answers: named, with those that are, not the SDK's bare "Method not
  // found" (MCP/CLI tester, session 48: prompts/list, logging/setLevel left an agent guessing).
  server.fallbackRequestHandler = async (request) => {
    throw rpcError(ErrorCode.MethodNotFound, methodNotFoundMessage(request.method));
  };
  return server;
}

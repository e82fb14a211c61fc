import { CancelledNotificationSchema, ErrorCode, InitializeRequestSchema, isJSONRPCNotification, isJSONRPCRequest, JSONRPCMessageSchema, LATEST_PROTOCOL_VERSION, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { describeValue, invalidParamsText, requestProblems } from "./_checked-request.ts";
import { ANSWERED_METHODS, methodNotFoundMessage } from "./_answered-methods.ts";

/** A JSON value checked as one JSON-RPC message: the message, or the error to answer with instead. */
export type CheckedMessage = { ok: true; message: JSONRPCMessage } | { ok: false; id: RequestId | null; code: number; message: string; notification: boolean };

const EXAMPLE = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}';

/** What a JSON-RPC message may hold; MCP's schemas refuse any other member. */
const MEMBERS = new Set(["jsonrpc", "id", "method", "params", "result", "error"]);

/**
 * One JSON-RPC message as MCP takes it, or why not, the same on every transport (docs: README,
 * "MCP"): params by position are invalid params (-32602); a batch, or anything else that is no
 * message, an invalid request (-32600) saying what is wrong and what to send. `unit` is what
 * carries one message ("line" on stdio, "request" over HTTP).
 */
export function checkMessage(value: unknown, unit: "line" | "request"): CheckedMessage {
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (parsed.success) return paramsChecked(parsed.data);
  const notification = isNotification(value);
  if (byPosition(value)) {
    // JSON-RPC 2.0 allows params by position; MCP's methods take them by name: the params are wrong, not the message.
    const method = (value as { method: string }).method;
    // A method the server does not answer is that, whatever its params (its params were refused first).
    if (!ANSWERED_METHODS.includes(method)) return { ok: false, id: idOf(value), code: ErrorCode.MethodNotFound, message: methodNotFoundMessage(method), notification };
    return { ok: false, id: idOf(value), code: ErrorCode.InvalidParams, message: `Invalid params: MCP methods take params by name, as an object, and ${JSON.stringify(method)} was sent an array. ${paramsHint(method)}`, notification };
  }
  const issue = deepest(parsed.error.issues as Issue[]);
  return { ok: false, id: idOf(value), code: ErrorCode.InvalidRequest, message: `Invalid Request: ${notAMessage(value, unit, issue)}`, notification };
}

/**
 * Whether `value` is a notification, whatever its params: "2.0", a string method and no `id`
 * member. JSON-RPC 2.0: a notification is never answered, one whose params do not fit included;
 * on stdio it is dropped (and said on stderr), over HTTP refused with an error status (MCP's
 * Streamable HTTP says so for input the server cannot accept).
 */
function isNotification(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const message = value as Record<string, unknown>;
  return message.jsonrpc === "2.0" && typeof message.method === "string" && !("id" in message);
}

const INITIALIZE_HINT = `Send params as {"protocolVersion": "${LATEST_PROTOCOL_VERSION}", "capabilities": {}, "clientInfo": {"name": "<client>", "version": "<version>"}}.`;

const CANCELLED_HINT = 'Send params like {"requestId": 7, "reason": "…"}: the id of the request to cancel, as it was sent.';

/**
 * What to send as `method`'s params, for a refusal of params sent by position: the example of
 * tools/call was given whatever the method (MCP/CLI tester, session 48: initialize was told to
 * send a tool's name).
 */
function paramsHint(method: string): string {
  switch (method) {
    case "initialize":
      return INITIALIZE_HINT;
    case "notifications/cancelled":
      return CANCELLED_HINT;
    case "tools/call":
      return 'Send params like {"name": "<tool>", "arguments": {…}}.';
    case "resources/read":
      return 'Send params like {"uri": "docket://executions/<id>"}.';
    default:
      return "Send params as an object, or none at all when the method takes none.";
  }
}

const TASK_HINT = "Send the request without task; for work to follow later, call docket_execution_start and read docket_execution_events.";

/**
 * A message whose params the SDK would refuse before any docket handler runs, answered -32602
 * naming what is wrong, as docket's handlers answer theirs (_checked-request.ts): an initialize
 * the SDK answers -32603 with its schema report (over HTTP, its transport takes it for no
 * initialize at all: "Server not initialized"), and a request for a task, which the SDK answers
 * -32603 "does not support task creation".
 */
function paramsChecked(message: JSONRPCMessage): CheckedMessage {
  // A cancellation whose requestId is no id (an object, null, 1.5) cancels nothing: refused as a
  // notification whose params do not fit, not taken in silence (MCP tester, session 41).
  if (isJSONRPCNotification(message) && message.method === "notifications/cancelled") {
    const problems = requestProblems(CancelledNotificationSchema, message);
    if (problems.length > 0) return { ok: false, id: null, code: ErrorCode.InvalidParams, message: invalidParamsText(message, problems, CANCELLED_HINT), notification: true };
  }
  if (!isJSONRPCRequest(message)) return { ok: true, message };
  if (message.method === "initialize") {
    const problems = requestProblems(InitializeRequestSchema, message);
    if (problems.length > 0) return { ok: false, id: message.id, code: ErrorCode.InvalidParams, message: invalidParamsText(message, problems, INITIALIZE_HINT), notification: false };
  }
  if ((message.params as { task?: unknown } | undefined)?.task !== undefined) {
    const problem = "params.task asks to run the request as an MCP task, which docket does not offer (it declares no tasks capability)";
    return { ok: false, id: message.id, code: ErrorCode.InvalidParams, message: invalidParamsText(message, [problem], TASK_HINT), notification: false };
  }
  return { ok: true, message };
}

interface Issue {
  path: PropertyKey[];
  message: string;
  errors?: Issue[][];
}

/**
 * The issue that says most: a message is a union (request, notification, response), so zod's
 * first issue is "no branch fits" at the root; the branch issue with the longest path names the
 * field that broke it (params._meta).
 */
function deepest(issues: Issue[]): Issue | undefined {
  let best: Issue | undefined;
  const visit = (list: Issue[]) => {
    for (const issue of list) {
      if (best === undefined || issue.path.length > best.path.length) best = issue;
      for (const branch of issue.errors ?? []) visit(branch);
    }
  };
  visit(issues);
  return best;
}

/**
 * The id of a message that is not one, when it has a usable one: its sender can then tell which
 * request failed. Usable is what MCP takes as an id, a string or a safe integer; any other id
 * (1.5, 1e300) could not be read, and JSON-RPC 2.0 answers that with id null, not echoed back.
 */
export function idOf(value: unknown): RequestId | null {
  const id = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as { id?: unknown }).id : undefined;
  return typeof id === "string" || Number.isSafeInteger(id) ? (id as RequestId) : null;
}

/** A JSON-RPC request (a string method, a usable id) whose params are an array. */
function byPosition(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const message = value as Record<string, unknown>;
  return message.jsonrpc === "2.0" && typeof message.method === "string" && idOf(value) !== null && Array.isArray(message.params);
}

/** Why a JSON value is no JSON-RPC message, and what to send instead. */
function notAMessage(value: unknown, unit: "line" | "request", issue: { path: PropertyKey[]; message: string } | undefined): string {
  if (Array.isArray(value)) return `a batch (a JSON array) is not taken: MCP sends one message per ${unit}. Send each message as an object ${unit === "line" ? "on a line of its own" : "in a request of its own"}, like ${EXAMPLE}.`;
  if (typeof value !== "object" || value === null) return `the ${unit} is ${describeValue(value)}, not a JSON-RPC message. Send an object like ${EXAMPLE}.`;
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== "2.0") return `"jsonrpc" must be "2.0", got ${describeValue(message.jsonrpc)}. Send messages like ${EXAMPLE}.`;
  if ("id" in message && idOf(message) === null) return `"id" must be a string or an integer, got ${describeValue(message.id)}.`;
  if ("method" in message && typeof message.method !== "string") return `"method" must be a string, got ${describeValue(message.method)}.`;
  if ("params" in message && (typeof message.params !== "object" || message.params === null || Array.isArray(message.params))) return `"params" must be an object, got ${describeValue(message.params)}.`;
  if ("method" in message && ("result" in message || "error" in message)) return `a message has "method" (a request or a notification) or "result" or "error" (a response), never both. Send messages like ${EXAMPLE}.`;
  const strangers = Object.keys(message).filter((key) => !MEMBERS.has(key));
  if (strangers.length > 0) {
    const named = strangers.slice(0, 3).map((key) => JSON.stringify(key.length > 40 ? `${key.slice(0, 37)}...` : key)).join(", ");
    return `${named}${strangers.length > 3 ? ", …" : ""} ${strangers.length === 1 ? "is no member" : "are no members"} of a JSON-RPC message, which has "jsonrpc" and "id", then "method" and "params" (a request; a notification has no "id"), or "result" or "error" (a response). Send messages like ${EXAMPLE}.`;
  }
  if (!("method" in message) && !("result" in message) && !("error" in message)) return `the message has no "method" (a request or a notification), nor a "result" or "error" (a response). Send messages like ${EXAMPLE}.`;
  // Whatever else: where the message stops fitting (params._meta not an object, say).
  if (issue !== undefined && issue.path.length > 0) return `${issue.path.map(String).join(".")}: ${issue.message.replace(/\.$/, "")}, got ${describeValue(valueAt(value, issue.path))}. Send messages like ${EXAMPLE}.`;
  return `the message does not fit JSON-RPC 2.0 as MCP uses it. Send messages like ${EXAMPLE}.`;
}

function valueAt(value: unknown, path: PropertyKey[]): unknown {
  let at: unknown = value;
  for (const key of path) at = at !== null && typeof at === "object" ? (at as Record<PropertyKey, unknown>)[key] : undefined;
  return at;
}

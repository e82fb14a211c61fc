import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { rpcError } from "./rpc-error.ts";

/** One problem of a request, as the SDK's (zod) schemas report it. */
interface Issue {
  code: string;
  path: PropertyKey[];
  message: string;
  expected?: string;
  errors?: Issue[][];
}

/** What docket needs of an SDK request schema (a zod object with a `method` literal). */
interface RequestSchema {
  safeParse(value: unknown): { success: true; data: unknown } | { success: false; error: { issues: Issue[] } };
  pick(mask: { method: true }): { loose(): { overwrite(check: (request: unknown) => unknown): unknown } };
}

/**
 * The SDK's schema of a request, checked so that params that do not fit are answered -32602
 * (invalid params) with what is wrong and `hint`, for stdio and HTTP alike.
 *
 * The SDK parses a request with its handler's schema before the handler runs, and a failed parse
 * (a ZodError, which has no JSON-RPC code) is answered -32603, internal error, as if docket had
 * failed. So the SDK is given a schema that only reads `method` and keeps the rest, and the full
 * schema is applied in its `overwrite` step: zod does not catch what a check throws, so the
 * McpError reaches the SDK, which answers with its code. The handler receives what the full
 * schema parsed, as before.
 */
export function checkedRequest<T>(schema: T, hint: string, keep?: (request: unknown, parsed: unknown) => unknown): T {
  const full = schema as unknown as RequestSchema;
  return full
    .pick({ method: true })
    .loose()
    .overwrite((request) => {
      const parsed = full.safeParse(request);
      if (parsed.success) return keep ? keep(request, parsed.data) : parsed.data;
      throw rpcError(ErrorCode.InvalidParams, invalidParamsText(request, problemsOf(parsed.error.issues, request), hint));
    }) as T;
}

/**
 * A tools/call's arguments as the agent sent them, not zod's copy: the copy assigns each member,
 * and an own `__proto__` member (JSON.parse makes one) set the copy's prototype instead — the
 * member was gone, and a write ran without it where HTTP refuses it (MCP tester). The schema
 * takes any member of any value there, so the object the agent sent is what it checked.
 */
export function keepSentArguments(request: unknown, parsed: unknown): unknown {
  const sent = (request as { params?: { arguments?: unknown } }).params?.arguments;
  const params = (parsed as { params?: { arguments?: unknown } }).params;
  if (params !== undefined && sent !== null && typeof sent === "object" && !Array.isArray(sent) && params.arguments !== undefined) params.arguments = sent;
  return parsed;
}

/** The problems of a request that its SDK schema does not take (at most five), or none when it fits. */
export function requestProblems(schema: unknown, request: unknown): string[] {
  const parsed = (schema as RequestSchema).safeParse(request);
  return parsed.success ? [] : problemsOf(parsed.error.issues, request);
}

/** The -32602 message: "Invalid params of tools/call: params.name must be a string, got nothing. <hint>". */
export function invalidParamsText(request: unknown, problems: string[], hint: string): string {
  const method = (request as { method?: unknown }).method;
  return `Invalid params of ${String(method)}: ${problems.join("; ")}. ${hint}`;
}

function problemsOf(issues: Issue[], request: unknown): string[] {
  return issues.slice(0, 5).map((issue) => problemText(issue, request));
}

/** "params.arguments must be an object, got \"Ada\"": the place, what it takes, what came. */
function problemText(issue: Issue, request: unknown): string {
  const place = issue.path.map(String).join(".");
  const got = describeValue(valueAt(request, issue.path));
  const expected =
    issue.code === "invalid_type" && issue.expected !== undefined
      ? [issue.expected]
      : issue.code === "invalid_union"
        ? (issue.errors ?? []).flatMap((branch) => branch.filter((inner) => inner.path.length === 0 && inner.expected !== undefined).map((inner) => inner.expected!))
        : [];
  if (expected.length === 0) return `${place}: ${issue.message}, got ${got}`;
  return `${place} must be ${expected.map(withArticle).join(" or ")}, got ${got}`;
}

function withArticle(type: string): string {
  if (type === "record" || type === "object") return "an object";
  if (type === "array" || type === "integer" || type === "int") return type === "int" ? "an integer" : `an ${type}`;
  if (type === "boolean") return "true or false";
  return `a ${type}`;
}

function valueAt(value: unknown, path: PropertyKey[]): unknown {
  let current = value;
  for (const key of path) current = typeof current === "object" && current !== null ? (current as Record<PropertyKey, unknown>)[key] : undefined;
  return current;
}

/** A value as an error message shows it: short, and never the whole of a large input. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) return "an object";
  // JSON writes them as null, which is not what was sent (1e400 reads as Infinity).
  if (typeof value === "number" && !Number.isFinite(value)) return `${value} (a number too large for JSON to hold)`;
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

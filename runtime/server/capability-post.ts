import type { ExecutionPlane } from "../execution/plane.ts";
import { isCapabilityId } from "../capability/capability-id.ts";
import type { RegisteredCapability } from "../capability/registered.ts";
import type { ServerConfig } from "./_app-env.ts";
import { API_PREFIX, methodsOf } from "./api-routes.ts";
import { edgeIdSource } from "./edge-ids.ts";
import { failureAnswer, failureOfThrown } from "./errors.ts";
import { isAllowedHost, isOwnOrigin, sameSecret } from "./guards.ts";
import { INCOMPLETE_BODY, isIdentityCoding, isJson } from "./json-body.ts";
import { isBlankJson } from "../execution/json-position.ts";
import { buildFailure } from "../execution/failure.ts";
import { answersBusyFailure, type LargeAnswers } from "./large-answers.ts";
import { bodiesBusyFailure, readCharged, type RequestBodies } from "./request-bodies.ts";

/** What the direct route needs besides the request: the app for everything it does not take, and the runtime's keep-open. */
export interface CapabilityPostEnv {
  /** The Hono app, which answers a request this route hands on exactly as if it had come to it first. */
  app(request: Request): Response | Promise<Response>;
  /** Lifts the runtime's idle timer for this request (see long-request.ts); absent where there is none. */
  keepOpen?(request: Request): void;
}

/** What the route is built from. */
export interface CapabilityPostOptions {
  plane: ExecutionPlane;
  config: ServerConfig;
  /** The budget of large answers, shared with the app's routes (large-answers.ts). */
  answers: LargeAnswers;
  /** The budget of request bodies being read, shared with the app (request-bodies.ts). */
  bodies: RequestBodies;
  /** Where the detail of an unexpected error goes (stderr); never a client. */
  log: (line: string) => void;
}

const PREFIX = `${API_PREFIX}/`;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * `POST /api/v1/<capability>` without Hono's per-request machinery (context, middleware chain,
 * router): on the HTTP start path of no-op executions that machinery was ~20 µs of the main
 * thread's ~85 µs per execution (bench/http-dispatch.ts). It takes only a request that every
 * guard of guards.ts admits as it stands — allowed Host, no foreign Origin, the token as a Bearer
 * header when one is configured — with a JSON body of a declared length within input_bytes, for
 * a loaded capability; anything else (a refusal, a cookie, a chunked body, a compressed body, a
 * query string, malformed JSON…) goes to the app unchanged, which answers it as it always did. What it answers
 * itself is what the app would: the call's output or its failure, with X-Request-Id.
 */
export function capabilityPost(options: CapabilityPostOptions): (request: Request, env: CapabilityPostEnv) => Promise<Response> {
  const { plane, config, answers, bodies, log } = options;
  const idSource = edgeIdSource();
  /** The request and trace ids of a request, as requestIdentity (guards.ts) takes them. */
  const idsOf = (request: Request) => ({ request_id: idSource.requestId(request.headers.get("x-request-id") ?? undefined), trace_id: idSource.traceId(request.headers.get("traceparent") ?? undefined) });
  // The last Host header found allowed, as accessGuard keeps it: the config does not change.
  let allowedHost: string | null = null;

  /** The capability a request may be answered for here, or null to hand it to the app. */
  const admitted = (request: Request): RegisteredCapability | null => {
    const url = request.url;
    const start = url.indexOf("/", url.indexOf("//") + 2);
    // Percent-escapes and queries are the app's to decode (Hono's getPath).
    if (start < 0 || !url.startsWith(PREFIX, start) || url.includes("%", start) || url.includes("?", start)) return null;
    const id = url.slice(start + PREFIX.length).split("/").join(".");
    const capability = isCapabilityId(id) ? plane.capability(id) : null;
    if (!capability || !methodsOf(capability).includes("POST")) return null;
    const headers = request.headers;
    const host = headers.get("host");
    if (host === null || (host !== allowedHost && !isAllowedHost(host, config.allowedHosts))) return null;
    allowedHost = host;
    const origin = headers.get("origin");
    if (origin !== null && !isOwnOrigin(origin, config)) return null;
    if (config.token !== null) {
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "");
      if (!bearer || !sameSecret(bearer[1]!, config.token)) return null;
    }
    const declared = headers.get("content-length");
    const type = headers.get("content-type");
    if (declared === null || !/^\d+$/.test(declared) || Number(declared) === 0 || Number(declared) > plane.limits.input_bytes) return null;
    if (type === null || !isJson(type)) return null;
    // A compressed body is the app's to refuse (415, json-body.ts), never read here as JSON.
    if (!isIdentityCoding(headers.get("content-encoding"))) return null;
    return capability;
  };

  return async (request, env) => {
    const capability = admitted(request);
    if (capability === null) return env.app(request);
    const id = capability.id;
    const declared = Number(request.headers.get("content-length"));
    let bytes: Uint8Array;
    try {
      // Under the budget the app's routes read under (request-bodies.ts).
      const read = await readCharged(request, bodies, declared, plane.limits.input_bytes);
      if (typeof read === "object" && "busy" in read) {
        const ids = idsOf(request);
        return failureAnswer(bodiesBusyFailure(read, ids), ids.request_id);
      }
      // Admitted checked the declared length, and a runtime delivers no more than it: never so.
      if (read === "too_large") throw new RangeError("The body is longer than its Content-Length.");
      bytes = read;
    } catch {
      // The client left before its whole body came: the app's answer, which nobody reads, and no log line.
      const ids = idsOf(request);
      return failureAnswer(buildFailure({ error_code: "invalid_input", stage: "validate", message: INCOMPLETE_BODY.message, suggestion: INCOMPLETE_BODY.suggestion, context: { ...INCOMPLETE_BODY.context }, ...ids }), ids.request_id, INCOMPLETE_BODY.status);
    }
    let input: unknown;
    try {
      if (bytes.byteLength > plane.limits.input_bytes) throw new RangeError("over input_bytes");
      const text = UTF8.decode(bytes);
      input = isBlankJson(text) ? {} : JSON.parse(text);
    } catch {
      // Too long, not UTF-8 or not JSON: the app says what is wrong with it, from the same bytes.
      return env.app(new Request(request.url, { method: "POST", headers: request.headers, body: bytes as Uint8Array<ArrayBuffer> }));
    }
    const edge = { actor: { kind: "http" as const }, ...idsOf(request) };
    try {
      env.keepOpen?.(request);
    } catch {
      // A request the server no longer knows (its client already left): the signal says so.
    }
    try {
      // Bounded by the call's own deadline; a client that leaves cancels it (long-request.ts).
      const output = await plane.call(id, input, edge, { signal: request.signal });
      const answer = answers.body(JSON.stringify(output ?? null), capability.effect === "read");
      if ("busy" in answer) return failureAnswer(answersBusyFailure(answer, edge), edge.request_id);
      const headers: Record<string, string> = { "Content-Type": "application/json", "X-Request-Id": edge.request_id };
      if (answer.length >= 0) headers["Content-Length"] = String(answer.length);
      return new Response(answer.body, { status: 200, headers });
    } catch (error) {
      return failureAnswer(failureOfThrown(error, edge, () => `POST ${new URL(request.url).pathname}`, log), edge.request_id);
    }
  };
}

import { Hono, type Context } from "hono";
import type { EdgeInfo, ExecutionPlane } from "../execution/plane.ts";
import { isCapabilityId, skippedIdReason } from "../capability/capability-id.ts";
import { didYouMean } from "../capability/did-you-mean.ts";
import { loadErrorFor, loadErrorSuggestion, LOOKALIKE_SUGGESTION, lookalikeFor, planeCapabilityHint } from "../capability/unknown-capability.ts";
import { callsDirectly } from "../capability/registered.ts";
import type { RegisteredCapability } from "../capability/registered.ts";
import type { AppEnv } from "./_app-env.ts";
import { edgeFailure, failureResponse } from "./errors.ts";
import { answersBusyFailure, type LargeAnswers } from "./large-answers.ts";
import { readJsonBody } from "./json-body.ts";
import { inputFromQuery, queryEncodingRefusal, queryRefusal } from "./query-input.ts";
import { downloadArtifact } from "./artifact-download.ts";
import { longRequest } from "./long-request.ts";
import { loopTurn } from "./loop-turn.ts";
import { quotedText } from "../execution/text-sanitize.ts";

/** Where every capability's route lives: `a.b` → `/api/v1/a/b`. */
export const API_PREFIX = "/api/v1";

/** The route of a capability id (dots become slashes). */
export function capabilityPath(id: string): string {
  return `${API_PREFIX}/${id.split(".").join("/")}`;
}

/** The methods a capability answers: `read` → GET and POST, `write` → POST only (docs/handler-api.md and README.md). */
export function methodsOf(capability: Pick<RegisteredCapability, "effect">): Array<"GET" | "POST"> {
  return capability.effect === "read" ? ["GET", "POST"] : ["POST"];
}


/** The edge facts the engine needs, as the guards established them. */
export function edgeOf(c: Context<AppEnv>): EdgeInfo {
  return { actor: c.get("actor"), ...c.get("ids") };
}

/**
 * The HTTP API as a projection of the registry: every capability at its path, looked up per
 * request (so the routes and the registry can never disagree), plus the two aliases of README.md.
 */
export function apiRoutes(plane: ExecutionPlane, answers: LargeAnswers): Hono<AppEnv> {
  const api = new Hono<AppEnv>();

  /** Calls a capability with an input taken from the query (GET) or the JSON body (POST). */
  const invoke = async (c: Context<AppEnv>, capability: RegisteredCapability): Promise<Response> => {
    let input: unknown;
    // One that has no direct call is refused as such whatever its input (README.md): not read at
    // all, so a malformed body or a missing parameter is not reported first.
    if (!callsDirectly(capability)) input = undefined;
    else if (c.req.method === "POST") {
      // A POST's input is its body alone: a query string beside it would be dropped without a
      // word, and a write would run with its defaults (`?dry_run=true` ignored) or a start lose its
      // run_id. Refused, naming what was not read.
      const names = [...new Set(new URL(c.req.url).searchParams.keys())];
      if (names.length > 0) {
        return edgeFailure(c, {
          status: 400,
          message: `POST ${capabilityPath(capability.id)} takes its input as a JSON body only; the query string (${names.slice(0, 10).join(", ")}${names.length > 10 ? ", …" : ""}) would not be read.`,
          suggestion: `Put those fields in the JSON body${capability.effect === "read" ? `, or call ${capabilityPath(capability.id)} with GET and a query string` : ""}.`,
          context: { reason: "query_on_post", parameters: names.slice(0, 50) },
        });
      }
      const body = await readJsonBody(c, plane.limits.input_bytes);
      if (!body.ok) return body.response;
      input = body.value;
    } else {
      // A GET's input is its query string alone: a body beside it (`curl -X GET -d '{…}'`) would be
      // dropped without a word, and the call answered for the defaults. Refused, as a POST's query is.
      const length = Number(c.req.header("content-length") ?? 0);
      if (length > 0 || c.req.header("transfer-encoding") !== undefined) {
        return edgeFailure(c, {
          status: 400,
          message: `${c.req.method} ${capabilityPath(capability.id)} takes its input as a query string only; the request's body${length > 0 ? ` (${length} bytes)` : ""} would not be read.`,
          suggestion: `Send the JSON body with POST ${capabilityPath(capability.id)}, or give its fields as query parameters.`,
          context: { reason: "body_on_get" },
        });
      }
      const url = new URL(c.req.url);
      const params = url.searchParams;
      const refused = queryEncodingRefusal(url.search) ?? queryRefusal(params, capability.input_schema);
      if (refused) return edgeFailure(c, { status: 400, message: refused.message, suggestion: refused.suggestion, context: refused.context });
      input = inputFromQuery(params, capability.input_schema);
    }
    // A read built on the main thread (a listing, a snapshot) waits for the loop to turn first, so
    // that workers' answers get through however many such reads come (loop-turn.ts).
    if (capability.plane && capability.effect === "read") await loopTurn();
    // The call is bounded by its own deadline; a client that leaves cancels it.
    const edge = edgeOf(c);
    const output = await plane.call(capability.id, input, edge, { signal: longRequest(c) });
    const text = JSON.stringify(output ?? null);
    // A HEAD sends no body: it takes nothing from the budget (its length is measured, headLikeGet).
    if (c.req.method === "HEAD") return c.body(text, 200, { "Content-Type": "application/json" });
    const answer = answers.body(text, capability.effect === "read");
    if ("busy" in answer) return failureResponse(c, answersBusyFailure(answer, edge));
    return c.body(answer.body, 200, { "Content-Type": "application/json", ...(answer.length < 0 ? {} : { "Content-Length": String(answer.length) }) });
  };

  api.get("/executions", (c) => {
    const list = plane.capability("executions.list");
    return list ? invoke(c, list) : unknownCapability(c, plane, "executions.list");
  });
  api.get("/executions/artifact", (c) => downloadArtifact(c, plane));
  // The two aliases exist for GET alone: any other method is told so, not that they do not exist.
  for (const alias of ["/executions", "/executions/artifact"]) api.all(alias, (c) => onlyGet(c, `${API_PREFIX}${alias}`));

  api.all("/*", (c) => {
    // `/api/v1/executions/`: the route without its last slash, named as such (not as a capability
    // `executions.`) when there is one; otherwise the capability it would name does not exist.
    const trimmed = c.req.path.replace(/\/+$/, "");
    const id = trimmed.slice(API_PREFIX.length + 1).split("/").join(".");
    if (trimmed !== c.req.path && (trimmed === `${API_PREFIX}/executions` || (isCapabilityId(id) && plane.capability(id)))) {
      const search = new URL(c.req.url).search;
      return edgeFailure(c, {
        status: 404,
        error_code: "not_found",
        message: `${c.req.path.slice(0, 200)} ends with a slash, and no route does.`,
        suggestion: `Call ${trimmed.slice(0, 200)}${search.slice(0, 200)} instead.`,
        context: { reason: "trailing_slash", path: trimmed.slice(0, 200) },
      });
    }
    const capability = isCapabilityId(id) ? plane.capability(id) : null;
    if (!capability) return unknownCapability(c, plane, id);
    const methods = methodsOf(capability);
    const method = c.req.method === "HEAD" ? "GET" : c.req.method;
    if (!methods.includes(method as "GET")) {
      const why = capability.effect === "write" ? `${id} may change something (effect: write), so it is called with POST only.` : `${id} is called with GET or POST.`;
      return edgeFailure(c, {
        status: 405,
        message: `${c.req.method} is not allowed on ${capabilityPath(id)}: ${why}`,
        context: { reason: "method_not_allowed", allow: methods },
        headers: { Allow: methods.join(", ") },
      });
    }
    return invoke(c, capability);
  });
  return api;
}

/** 405 for a path answered by GET alone (Allow: GET). */
export function onlyGet(c: Context<AppEnv>, path: string): Response {
  return edgeFailure(c, {
    status: 405,
    message: `${c.req.method} is not allowed on ${path}: it is read with GET only.`,
    context: { reason: "method_not_allowed", allow: ["GET"] },
    headers: { Allow: "GET" },
  });
}

function unknownCapability(c: Context<AppEnv>, plane: ExecutionPlane, id: string): Response {
  if (id === "") {
    return edgeFailure(c, {
      status: 404,
      error_code: "not_found",
      message: `${API_PREFIX}/ names no capability.`,
      suggestion: `Call a capability at ${API_PREFIX}/<id with dots as slashes>, like ${API_PREFIX}/capabilities/list, which lists them.`,
      context: { capabilities: `${API_PREFIX}/capabilities/list` },
    });
  }
  // Its file did not load (the usual case right after an edit): why, as executions.start says it.
  const broken = loadErrorFor(id, plane);
  if (broken !== undefined) {
    return edgeFailure(c, {
      status: 404,
      error_code: "not_found",
      message: `No capability "${id}" is loaded, so ${capabilityPath(id)} does not exist now: ${planeCapabilityHint(id, plane).replace(/\.$/, "")}.`,
      suggestion: loadErrorSuggestion(broken),
      context: { capability: id, file: broken.file, line: broken.line, reason: "load_error" },
    });
  }
  // A file named for it that discovery does not take (a subfolder, a .tsx): which, and why.
  const lookalike = lookalikeFor(id, plane);
  if (lookalike !== undefined) {
    return edgeFailure(c, {
      status: 404,
      error_code: "not_found",
      message: `No capability "${id}" is loaded, so ${capabilityPath(id)} does not exist: ${lookalike.file} is not loaded: ${lookalike.reason}.`,
      suggestion: LOOKALIKE_SUGGESTION,
      context: { capability: id, file: lookalike.file, reason: "not_a_capability_file" },
    });
  }
  const close = didYouMean(id.slice(0, 128), plane.capabilities().filter(callsDirectly).map((x) => x.id)).map(capabilityPath);
  // `repo.test`: no file can declare it; what to name it instead (authoring checking tester, session 49).
  const skipped = skippedIdReason(id);
  return edgeFailure(c, {
    status: 404,
    error_code: "not_found",
    message: `No capability ${quotedText(id.slice(0, 128))} is loaded, so ${quotedText(`${API_PREFIX}/${id.split(".").join("/").slice(0, 128)}`)} does not exist.`,
    suggestion: `${skipped !== null ? `${skipped[0]!.toUpperCase()}${skipped.slice(1)}. ` : ""}${close.length > 0 ? `Did you mean ${close.join(" or ")}? ` : ""}List the loaded capabilities at ${API_PREFIX}/capabilities/list.`,
    context: { capability: id.slice(0, 128), capabilities: `${API_PREFIX}/capabilities/list` },
  });
}

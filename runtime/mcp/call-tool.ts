import { ErrorCode, type CallToolResult, type ProgressToken } from "@modelcontextprotocol/sdk/types.js";
import { rpcError } from "./rpc-error.ts";
import { isObjectSchema } from "./_schemas.ts";
import { buildFailure, FailureError } from "../execution/failure.ts";
import type { EdgeInfo, ExecutionPlane, StartResult } from "../execution/plane.ts";
import { failureOf, failureToolResult } from "./failure-result.ts";
import { followExecution } from "./follow.ts";
import { ProgressRelay, type ProgressParams } from "./progress-relay.ts";
import { toolName, toolTargets, type ToolTarget } from "./tools.ts";
import { didYouMeanText } from "../capability/did-you-mean.ts";
import { planeCapabilityHint } from "../capability/unknown-capability.ts";
import { idNamedBy, skippedIdReason } from "../capability/capability-id.ts";
import { droppedFieldText, undeclaredFields } from "../execution/undeclared-fields.ts";
import { sensitiveValues } from "../execution/secret-mask.ts";
import { callsDirectly } from "../capability/registered.ts";
import { checkValue, describeProblems, transforms, type ValueProblem } from "../execution/validate.ts";
import { pathStep } from "../execution/json-path.ts";

/** Everything one tools/call needs besides the plane. */
export interface ToolCallContext {
  edge: EdgeInfo;
  /** Aborted by `notifications/cancelled` for this request, or when the connection closes. */
  signal: AbortSignal;
  /**
   * Aborted when the HTTP request that carried the call ended before its answer (its client
   * dropped it, or the docket mcp forwarding it died): a direct call is cancelled as by a closed
   * connection; a started execution runs on, and only the wait for it ends.
   */
  callerLeft?: AbortSignal;
  progressToken?: ProgressToken;
  /** Sends one progress notification tied to this request. */
  sendProgress(params: ProgressParams & { progressToken: ProgressToken }): Promise<void>;
  /** True once the connection closed: an abort then means "the client went away", not "cancel". */
  connectionClosed(): boolean;
  log(line: string): void;
}

/**
 * Answers tools/call: a plane tool through its plane capability, a work capability as a direct
 * call, docket_execution_start as a start that, with `wait`, follows the execution to its end.
 * An unknown tool is a protocol error (MCP: -32602); everything else that fails is a tool result
 * carrying the failure descriptor.
 */
export async function callTool(plane: ExecutionPlane, name: string, args: Record<string, unknown> | undefined, context: ToolCallContext): Promise<CallToolResult> {
  const targets = toolTargets(plane);
  const target = targets.get(name);
  if (!target) throw rpcError(ErrorCode.InvalidParams, `No tool ${JSON.stringify(name.slice(0, 128))}.${unknownToolHint(plane, name, targets.keys())} tools/list names the tools of this server.`);
  const input = args ?? {};
  // Cancelled by the client, or left by it: either way nobody waits for the answer.
  const abandoned = context.callerLeft ? AbortSignal.any([context.signal, context.callerLeft]) : context.signal;
  // A direct call's arguments, once sent: what its notes are read from, whether it succeeds or fails.
  let noted: { target: ToolTarget; given: unknown } | null = null;
  try {
    if (target.kind === "start") return await start(plane, target, input, { ...context, abandoned });
    if (target.kind === "plane") return success(target, await plane.call(target.capability.id, input, context.edge));
    // A cancelled request (or a client gone) cancels the direct call: its handler is asked to stop
    // and, grace_ms later, its worker is terminated. The answer is not awaited past the abort.
    const value = isObjectSchema(target.capability.input_schema) ? input : unwrapped(target, input, context.edge);
    noted = { target, given: value };
    return withNotes(success(target, await untilAborted(plane.call(target.capability.id, value, context.edge, { signal: abandoned }), abandoned)), target, value);
  } catch (error) {
    // A cancelled request gets no answer (the SDK drops it); this only keeps the abort out of the log.
    if (abandoned.aborted) return failureToolResult(cancelledFailure(name, context.edge));
    // A read that failed on the default a misspelt field left it (`mdoe` for `mode`) says so too.
    const failed = failureToolResult(failureOf(error, context.edge, context.log, `tools/call ${name}`));
    return noted === null ? failed : withNotes(failed, noted.target, noted.given);
  }
}

/** What an agent should call instead: the start tool for an execution-only capability, else the closest names. */
function unknownToolHint(plane: ExecutionPlane, name: string, names: Iterable<string>): string {
  const executionOnly = plane.capabilities().find((c) => toolName(c.id) === name && !callsDirectly(c));
  if (executionOnly) return ` ${executionOnly.id} runs only as an execution: call docket_execution_start with {"capability":"${executionOnly.id}"}.`;
  // Its file no longer loads (an edit broke it while an agent held the tool list): why, as HTTP says it (MCP tester, session 41).
  const broken = plane.loadErrors().map((error) => idNamedBy(error.file)).find((id) => toolName(id) === name);
  if (broken !== undefined) return ` ${planeCapabilityHint(broken, plane)}`;
  // `repo_test`, the tool `repo.test` would have: no file can declare such an id; what to name it instead.
  const skipped = skippedIdReason(name.replace(/_([a-z]+)$/, ".$1"));
  const close = didYouMeanText(name.slice(0, 128), names);
  return `${skipped !== null ? ` ${skipped[0]!.toUpperCase()}${skipped.slice(1)}.` : ""}${close ? ` ${close}` : ""}`;
}

/**
 * The input of a capability whose input is no object, which its tool takes as the argument
 * `input` (MCP's arguments are an object): any other argument is refused, as an undeclared member
 * of an object input is, not dropped — a write never runs with part of what was asked left out
 * (`dry_run` beside `input`; MCP tester, session 41) — and a missing `input` is said so, where it
 * read "Expected string but received Object".
 */
function unwrapped(target: ToolTarget, args: Record<string, unknown>, edge: EdgeInfo): unknown {
  const problems = Object.keys(args)
    .filter((key) => key !== "input")
    .map((key) => ({
      path: `arguments${pathStep(key.slice(0, 128))}`,
      message: `Unknown argument ${JSON.stringify(key.slice(0, 128))}: the tool takes one argument, input, which holds the whole input of ${target.capability.id}.`,
    }));
  if (!Object.hasOwn(args, "input") && !("default" in target.capability.input_schema)) problems.unshift({ path: "arguments.input", message: `Missing argument "input": the input of ${target.capability.id} goes in it, as its schema (the tool's inputSchema) says.` });
  if (problems.length === 0) return args.input;
  refuseArguments(target, problems, edge, `Call ${toolName(target.capability.id)} with {"input": …} alone.`);
}

/** Refuses a tool call's arguments, each problem named, as the capability's own check refuses an input. */
function refuseArguments(target: ToolTarget, problems: ValueProblem[], edge: EdgeInfo, suggestion?: string): never {
  throw new FailureError(
    buildFailure({
      error_code: "invalid_input",
      stage: "validate",
      message: `Cannot call ${target.capability.id}: ${describeProblems(problems)}`,
      ...(suggestion === undefined ? {} : { suggestion }),
      context: { problems: problems.slice(0, 50) },
      request_id: edge.request_id,
      trace_id: edge.trace_id,
    }),
  );
}

function cancelledFailure(name: string, edge: EdgeInfo) {
  return buildFailure({ error_code: "cancelled", stage: "run", message: `The client cancelled tools/call ${name}.`, request_id: edge.request_id, trace_id: edge.trace_id });
}

/**
 * A member docket_execution_start does not take is refused as executions.start refuses one, its
 * list of members with `wait` in it: the tool's schema has `wait`, so leaving it out of the list
 * would send an agent away from the one member it may have meant.
 */
function refuseUnknownMembers(target: ToolTarget, args: Record<string, unknown>, edge: EdgeInfo): void {
  const members = [...Object.keys((target.capability.input_schema.properties as object | undefined) ?? {}), "wait"];
  const problems = Object.keys(args)
    .filter((key) => !members.includes(key))
    .map((key) => {
      const near = didYouMeanText(key.slice(0, 128), members);
      return { path: `input${pathStep(key)}`, message: `Unknown member ${JSON.stringify(key)}: ${near ? `${near} ` : ""}The members are ${members.join(", ")}.` };
    });
  if (problems.length > 0) refuseArguments(target, problems, edge);
}

/** docket_execution_start: answers at once, or with `wait` follows the execution to its end. */
async function start(plane: ExecutionPlane, target: ToolTarget, args: Record<string, unknown>, context: ToolCallContext & { abandoned: AbortSignal }): Promise<CallToolResult> {
  const { wait = false, ...request } = args;
  if (typeof wait !== "boolean") {
    throw new FailureError(
      buildFailure({
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot start: wait must be true or false, got ${JSON.stringify(wait)?.slice(0, 100)}.`,
        context: { problems: [{ path: "input.wait", message: "Invalid type: Expected boolean" }] },
        request_id: context.edge.request_id,
        trace_id: context.edge.trace_id,
      }),
    );
  }
  refuseUnknownMembers(target, args, context.edge);
  const started = (await plane.call(target.capability.id, request, context.edge)) as StartResult;
  // What its input's check dropped, from the input it kept as docket run reads it (a write's was refused).
  const given = (request as { input?: unknown }).input;
  const run = target.capability.id === "executions.start" && typeof (request as { capability?: unknown }).capability === "string" ? plane.capability((request as { capability: string }).capability) : null;
  const note = (result: CallToolResult) => (run && "input" in started.execution ? withNotes(result, { ...target, capability: run }, given ?? {}, started.execution.input) : result);
  const { id } = started.execution;
  const cancel = () => {
    if (context.connectionClosed()) return;
    try {
      plane.cancel(id, context.edge);
    } catch (error) {
      context.log(`[docket] MCP could not cancel ${id}: ${(error as Error)?.message ?? String(error)}`);
    }
  };
  // Cancelled while the start was admitted (its cancel came in the same write as the call, say):
  // the SDK sends no answer, so the agent never learns the id, and the execution is cancelled
  // as if it had been waited on. A connection closed meanwhile has already said so (onclose).
  if (context.signal.aborted) {
    cancel();
    return note(success(target, started));
  }
  if (!wait) return note(success(target, started));

  const relay = context.progressToken === undefined ? null : new ProgressRelay((params) => context.sendProgress({ ...params, progressToken: context.progressToken! }));
  // The SDK aborts every request when the connection closes, and calls onclose right after in
  // the same turn: deciding a microtask later tells a client's cancel from a client gone away.
  const onAbort = () => queueMicrotask(cancel);
  context.signal.addEventListener("abort", onAbort, { once: true });
  try {
    // A caller that left stops the wait only: like a client that disconnects, it cancels nothing.
    const outcome = await followExecution(plane.store, id, { signal: context.abandoned, onEvent: relay ? (event) => relay.push(event) : undefined });
    await relay?.drained();
    // Aborted: the SDK sends no answer to a cancelled request; gone: the details were forgotten
    // already, so what the start said is all there is.
    if (outcome.kind !== "completed") return note(success(target, started));
    // An execution that ended failed or cancelled is a failed tool call: the descriptor, isError.
    const { snapshot } = outcome;
    if (snapshot.state !== "succeeded" && snapshot.failure) {
      const result = failureToolResult(snapshot.failure);
      // The execution itself rides along as text, so an agent still learns its id and its end.
      return note({ ...result, content: [...result.content, { type: "text", text: JSON.stringify({ ...started, execution: snapshot }) }] });
    }
    return note(success(target, { ...started, execution: snapshot }));
  } finally {
    if (!context.signal.aborted) context.signal.removeEventListener("abort", onAbort);
  }
}

/**
 * A read's result with a note for each field of its arguments that its input's check dropped: it
 * drops those without a word (a write is refused instead), so `{"txet": "x"}` ran on the defaults
 * and the agent was never told (MCP/CLI tester, session 48), where `docket run` says so. `kept` is
 * what the check kept (the execution's stored input, for a start); for a direct call, which keeps
 * nothing, the check is made again here — not for a schema that transforms, which would run its
 * transforms again — so that a field a loose object or a record keeps is never said to be ignored.
 * A secret of the input is never written in a note (a key made of one).
 */
function withNotes(result: CallToolResult, target: ToolTarget, given: unknown, kept?: unknown): CallToolResult {
  const notes = droppedNotes(target, given, kept);
  return notes.length === 0 ? result : { ...result, content: [...result.content, ...notes.map((text) => ({ type: "text" as const, text }))] };
}

function droppedNotes(target: ToolTarget, given: unknown, kept?: unknown): string[] {
  // A write's dropped field was refused before it ran: nothing to note, nothing to check again.
  if (target.capability.effect !== "read") return [];
  const schema = target.capability.input_schema;
  let fields: string[];
  try {
    if (kept !== undefined) fields = undeclaredFields(given, kept, schema);
    else {
      // A schema that transforms is not run twice (a transform may do something each time): its notes are left out.
      if (transforms(target.capability.def.input)) return [];
      // Checked as the engine checks it (own members only: a field named like toString is a field).
      const checked = checkValue(target.capability.def.input, given, "input");
      if (!checked.ok) return [];
      fields = undeclaredFields(given, checked.value, schema, { exact: true });
    }
  } catch {
    // A check that throws is the call's to report, not a note's.
    return [];
  }
  if (fields.length === 0) return [];
  const secrets = sensitiveValues(given, schema).filter((secret) => secret.length >= 4);
  const masked = (text: string) => secrets.reduce((said, secret) => said.split(secret).join("[redacted]"), text);
  return fields.map((field) => masked(`note: ${target.capability.id} has no input field ${droppedFieldText(field, schema)}; it was ignored`));
}

/** A successful result: the output as structured content when it is an object, and as JSON text. */
function success(target: ToolTarget, output: unknown): CallToolResult {
  const structured = isObjectSchema(target.capability.output_schema) && isRecord(output);
  return {
    content: [{ type: "text", text: JSON.stringify(output ?? null) }],
    ...(structured ? { structuredContent: output as Record<string, unknown> } : {}),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The call's answer, or a rejection as soon as the signal aborts (the call itself runs on). */
function untilAborted<T>(call: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // Nobody waits for the call's own end any more: its failure (cancelled, most likely) is not an uncaught one.
    call.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    call.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

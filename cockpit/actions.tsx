/** @jsxImportSource hono/jsx */
import type { Context } from "hono";
import type { ExecutionNotice, Notices } from "./notices.ts";
import { CapabilityError } from "../runtime/capability/capability-error.ts";
import { callsDirectly, runsAsExecution, type RegisteredCapability } from "../runtime/capability/registered.ts";
import { isExecutionId } from "../runtime/execution/execution-id.ts";
import { buildFailure, FailureError, type FailureDescriptor } from "../runtime/execution/failure.ts";
import type { EdgeInfo, ExecutionPlane } from "../runtime/execution/plane.ts";
import { failureAnswer, requestIds, statusOf } from "../runtime/server/errors.ts";
import { longRequest } from "../runtime/server/long-request.ts";
import { readFormBody } from "./form-body.ts";
import { fieldErrorsOf } from "./failure-fields.ts";
import { hasSensitive } from "../runtime/execution/redaction.ts";
import { formShape } from "./form-fields.ts";
import { inputFromForm, RAW_JSON_CONTROL } from "./form-input.ts";
import { CONFIRM_CONTROL, MODE_CONTROL, TYPE_AGAIN_CONTROL } from "./json-schema-form.tsx";
import { CapabilityPage, type CallResult } from "./pages/capability.tsx";
import { capabilityHistory } from "./chart-data.ts";
import { capabilityPagePath, executionPagePath } from "./paths.ts";
import { RESULT_QUERY, type CallResults } from "./call-results.ts";
import { problemResponse } from "./problem-response.tsx";
import { htmlPage, pageHtml } from "./render.ts";

/** The edge of a cockpit action: the actor is the cockpit, the ids are the request's. */
export function cockpitEdge(c: Context): EdgeInfo {
  return { actor: { kind: "cockpit" }, ...requestIds(c as never) };
}

/**
 * The controls a form filled in: each name sent with a value, and each group above it (`input.a`
 * for `input.a.0.b`), so that a secret that was a whole group (an object, rows, a record) counts
 * as typed again once anything in it is. A variant's chooser alone fills nothing. Made once per
 * form: names beyond 32 segments deep are no control's (form-names.ts).
 */
function filledControls(form: URLSearchParams): Set<string> {
  const filled = new Set<string>();
  for (const [name, value] of form) {
    if (value === "" || name.endsWith(".variant") || filled.has(name)) continue;
    filled.add(name);
    let at = name.lastIndexOf(".");
    for (let depth = 0; at > 0 && depth < 32; depth++, at = name.lastIndexOf(".", at - 1)) filled.add(name.slice(0, at));
  }
  return filled;
}

/** A thrown expected failure as its descriptor; anything else is rethrown (a 500 page). */
function failureOf(c: Context, error: unknown): FailureDescriptor {
  if (error instanceof FailureError) return error.failure;
  if (CapabilityError.is(error)) {
    return buildFailure({ error_code: error.code, stage: "run", message: error.message, context: error.context, suggestion: error.suggestion, retryability: error.retryability, ...requestIds(c as never) });
  }
  throw error;
}

/**
 * POST `/cockpit/capabilities/<id>`: the generated form's two buttons. "Run as execution" starts
 * it and answers 303 to the execution's page; "Run" calls it and answers 303 to the capability
 * page of its output (or failure), kept for a reload (call-results.ts). A form that cannot be
 * read is shown again with its problems, as a 400; a write that was not confirmed is not run.
 */
export async function runCapability(c: Context, plane: ExecutionPlane, capability: RegisteredCapability, results: CallResults): Promise<Response> {
  const body = await readFormBody(c, plane.limits.input_bytes);
  if (!body.ok) return "response" in body ? body.response : problemResponse(c, plane.root, { status: body.status, title: "The form could not be read", message: body.message });
  const form = body.form;
  const drawn = (extra: { errors?: Record<string, string>; problem?: string | null; result?: CallResult | null }) => (
    <CapabilityPage root={plane.root} capability={capability} values={form} errors={extra.errors ?? {}} problem={extra.problem ?? null} result={extra.result ?? null} history={capabilityHistory(plane.store, capability.id)} />
  );
  const page = (status: number, extra: Parameters<typeof drawn>[0]) => htmlPage(c, drawn(extra), status);
  // What a call that ran answers is kept and read by a GET (303): a reload, or Back, must not post
  // the form again — run a write twice, send its secret again (tester F).
  const ran = (status: number, extra: Parameters<typeof drawn>[0]) => {
    const html = pageHtml(drawn(extra));
    let token = results.keep({ html, status, capability: capability.id });
    // An output whose page is larger than all that is kept is said, not shown, and kept so: answered
    // to the POST itself, a reload posted the form again and ran the call again (cockpit tester,
    // session 48: a write's 50 MB page).
    if (token === null && extra.result?.kind === "output") token = results.keep({ html: pageHtml(drawn({ ...extra, result: { kind: "output_too_large", pageBytes: Buffer.byteLength(html) } })), status, capability: capability.id });
    // Still larger (a form of megabytes, which the page shows again): answered as it is, the one way left to show it.
    return token === null ? c.html(html, status as 200) : c.redirect(`${capabilityPagePath(capability.id)}?${RESULT_QUERY}=${token}`, 303);
  };

  // A failure about a field (the schema's check, or one naming it) is also shown at that field.
  const failedPage = (failure: FailureDescriptor, answer: typeof page = page) =>
    answer(statusOf(failure), { result: { kind: "failure", failure }, errors: fieldErrorsOf(failure, formShape(capability.input_schema), form) });

  const mode = form.get(MODE_CONTROL);
  if (form.getAll(MODE_CONTROL).length > 1 || (mode !== "call" && mode !== "start")) return page(400, { problem: 'Choose "Run" or "Run as execution" (one of them).' });
  const reading = inputFromForm(formShape(capability.input_schema), form, { secrets: hasSensitive(capability.input_schema), rootType: capability.input_schema.type });
  if (!reading.ok) return page(400, { errors: reading.errors, problem: reading.message });
  // Run again of an execution given a secret: not sent without it, unasked (cockpit tester: an
  // optional token left empty ran with another input). The raw JSON box, when filled, is the input.
  const typed = (form.get(RAW_JSON_CONTROL) ?? "").trim() === "" ? filledControls(form) : null;
  const untyped = typed === null ? [] : form.getAll(TYPE_AGAIN_CONTROL).filter((control) => !typed.has(control));
  if (untyped.length > 0) {
    const problem = "The execution this form runs again was given a secret here, and secrets are never stored: type it again. To run without it, open the capability's form afresh.";
    return page(400, { errors: Object.fromEntries(untyped.map((control) => [control, "Type it again: the execution this runs again was given one."])), problem });
  }
  if (capability.effect === "write" && !form.getAll(CONFIRM_CONTROL).includes("1")) {
    const problem = `${capability.id} may change something (effect: write): confirm before it runs.`;
    return page(400, { errors: { [CONFIRM_CONTROL]: problem }, problem });
  }
  const edge = cockpitEdge(c);
  if (mode === "start") {
    if (!runsAsExecution(capability)) return page(400, { problem: `${capability.id} runs only as a direct call: use "Run".` });
    try {
      // Sent to its page once its start is committed, as the API answers a start: the page of an
      // execution a crash then takes back would have been a promise broken (docs/durability.md).
      const started = await plane.handle(edge).start({ capability: capability.id, input: reading.input });
      return c.redirect(started.execution.links.cockpit, 303);
    } catch (error) {
      return failedPage(failureOf(c, error));
    }
  }
  if (!callsDirectly(capability)) return page(400, { problem: `${capability.id} runs only as an execution: use "Run as execution".` });
  try {
    const output = await plane.call(capability.id, reading.input, edge, { signal: longRequest(c) });
    return ran(200, { result: { kind: "output", value: output } });
  } catch (error) {
    return failedPage(failureOf(c, error), ran);
  }
}

/** What an execution page says after a cancel request, by the `notice` query parameter. */
export const CANCEL_NOTICES = {
  "cancel-requested": { kind: "success", text: "Cancel requested. The execution stops when its handler next checks; this page shows when it has." },
  "cancel-refused": { kind: "error", text: "Cancel was not requested: the execution had already finished or cannot be cancelled." },
  "cancel-unrecorded": { kind: "error", text: "Cancel asked of the handler, but the execution store cannot write at the moment: it is recorded once it can (health.report says why), and until then a crash would forget it." },
} as const;

/**
 * POST `/cockpit/executions/<id>/cancel`: asks for cancellation, answered once the request is
 * committed, as the API answers it. A script asking for JSON gets the receipt; a plain form post
 * is sent back to the execution's page (303) with a notice.
 */
export async function cancelExecution(c: Context, plane: ExecutionPlane, id: string, notices: Notices<ExecutionNotice>): Promise<Response> {
  // A script asking for JSON (the page's Cancel button) gets its refusals as the API gives them too.
  const json = (c.req.header("accept") ?? "").includes("application/json");
  if (!isExecutionId(id)) {
    const message = `${JSON.stringify(String(id).slice(0, 80))} is not an execution id (x-<yyyymmddThhmmssZ>-<8 hex>).`;
    if (json) return failureAnswer(buildFailure({ error_code: "invalid_input", stage: "validate", message, ...requestIds(c as never) }), requestIds(c as never).request_id, 400);
    return problemResponse(c, plane.root, { status: 400, title: "Not an execution id", message });
  }
  let receipt;
  try {
    receipt = await plane.handle(cockpitEdge(c)).cancel(id);
  } catch (error) {
    const failure = failureOf(c, error);
    const status = statusOf(failure);
    if (json) return failureAnswer(failure, requestIds(c as never).request_id, status);
    return problemResponse(c, plane.root, { status, title: status === 404 ? "No such execution" : "Cancel failed", message: failure.message, suggestion: failure.suggestion });
  }
  const notice = !receipt.requested ? "cancel-refused" : receipt.recorded === false ? "cancel-unrecorded" : "cancel-requested";
  // A script gets the receipt, and the notice the page it may go to shows (X-Docket-Notice: execution.js).
  if (json) return c.json(receipt, 200, { "X-Docket-Notice": notices.issue(id, notice) });
  return c.redirect(`${executionPagePath(id)}?notice=${notices.issue(id, notice)}`, 303);
}

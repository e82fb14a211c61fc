/** @jsxImportSource hono/jsx */
import type { Context } from "hono";
import type { ExecutionNotice, Notices } from "./notices.ts";
import { isExecutionId } from "../runtime/execution/execution-id.ts";
import { FailureError } from "../runtime/execution/failure.ts";
import type { ExecutionPlane, ReconcileReceipt } from "../runtime/execution/plane.ts";
import { statusOf } from "../runtime/server/errors.ts";
import { cockpitEdge } from "./actions.tsx";
import { NOTE_CONTROL, OUTCOME_CONTROL } from "./components/reconciliation-panel.tsx";
import { readFormBody } from "./form-body.ts";
import { CONFIRM_CONTROL } from "./json-schema-form.tsx";
import { executionPagePath } from "./paths.ts";
import { problemResponse } from "./problem-response.tsx";

/** What an execution page says after its reconcile form, by the `notice` query parameter. */
export const RECONCILE_NOTICES = {
  reconciled: { kind: "success", text: "Reconciled. The execution keeps its state; its artifacts may now be released." },
  "check-unsure": { kind: "info", text: "The capability's check could not tell whether it took effect, so nothing was recorded. Check by hand and record what you find." },
} as const;

/**
 * POST `/cockpit/executions/<id>/reconcile`: the reconcile form, through the `executions.reconcile`
 * capability like every other surface. Confirmed or refused; then back to the execution's page
 * (303) with a notice, or a problem page naming what was wrong.
 */
export async function reconcileExecution(c: Context, plane: ExecutionPlane, id: string, notices: Notices<ExecutionNotice>): Promise<Response> {
  const refuse = (status: number, title: string, message: string, suggestion?: string) => problemResponse(c, plane.root, { status, title, message, suggestion });
  if (!isExecutionId(id)) return refuse(400, "Not an execution id", `${JSON.stringify(String(id).slice(0, 80))} is not an execution id (x-<yyyymmddThhmmssZ>-<8 hex>).`);
  const body = await readFormBody(c, 64 * 1024);
  if (!body.ok) return "response" in body ? body.response : refuse(body.status, "The form could not be read", body.message);
  const choice = body.form.get(OUTCOME_CONTROL);
  if (choice !== "applied" && choice !== "not_applied" && choice !== "check") {
    return refuse(400, "No outcome chosen", 'Choose "It took effect", "It did not take effect" or, when offered, the capability\'s check.');
  }
  if (!body.form.getAll(CONFIRM_CONTROL).includes("1")) {
    return refuse(400, "Not confirmed", "A reconciliation is written once and never replaced: confirm it before it is recorded.", "Go back, and confirm when asked (or tick the box).");
  }
  const note = (body.form.get(NOTE_CONTROL) ?? "").trim();
  const input = { id, ...(choice === "check" ? {} : { outcome: choice }), ...(note === "" ? {} : { note }) };
  let receipt: ReconcileReceipt;
  try {
    receipt = (await plane.call("executions.reconcile", input, cockpitEdge(c))) as ReconcileReceipt;
  } catch (error) {
    if (!(error instanceof FailureError)) throw error;
    const status = statusOf(error.failure);
    return refuse(status, status === 404 ? "No such execution" : "Not reconciled", error.failure.message, error.failure.suggestion);
  }
  return c.redirect(`${executionPagePath(id)}?notice=${notices.issue(id, receipt.reconciled ? "reconciled" : "check-unsure")}`, 303);
}

/** @jsxImportSource hono/jsx */
import type { Context } from "hono";
import type { ExecutionNotice, Notices } from "./notices.ts";
import { isExecutionId } from "../runtime/execution/execution-id.ts";
import { FailureError } from "../runtime/execution/failure.ts";
import type { ExecutionPlane } from "../runtime/execution/plane.ts";
import { statusOf } from "../runtime/server/errors.ts";
import { cockpitEdge } from "./actions.tsx";
import { readFormBody } from "./form-body.ts";
import { executionPagePath } from "./paths.ts";
import { problemResponse } from "./problem-response.tsx";

/** What an execution page says after a release, by the `notice` query parameter. */
export const RELEASE_NOTICES = {
  released: { kind: "success", text: "The artifacts were released: their files are deleted." },
} as const;

/**
 * POST `/cockpit/executions/<id>/release`: deletes an execution's artifacts once the form's
 * confirmation box is ticked. The engine decides whether they may go (terminal, outcome known);
 * a refusal is a page that says why, never a silent no-op.
 */
export async function releaseArtifacts(c: Context, plane: ExecutionPlane, id: string, notices: Notices<ExecutionNotice>): Promise<Response> {
  if (!isExecutionId(id)) {
    return problemResponse(c, plane.root, { status: 400, title: "Not an execution id", message: `${JSON.stringify(String(id).slice(0, 80))} is not an execution id (x-<yyyymmddThhmmssZ>-<8 hex>).` });
  }
  const body = await readFormBody(c, 4096);
  if (!body.ok) return "response" in body ? body.response : problemResponse(c, plane.root, { status: body.status, title: "The form could not be read", message: body.message });
  if (body.form.get("confirmed") !== "1") {
    return problemResponse(c, plane.root, { status: 400, title: "Not confirmed", message: "Releasing deletes the files for good: tick the box to confirm, then press Release again." });
  }
  try {
    plane.handle(cockpitEdge(c)).release(id);
  } catch (error) {
    if (!(error instanceof FailureError)) throw error;
    const status = statusOf(error.failure);
    return problemResponse(c, plane.root, { status, title: status === 404 ? "No such execution" : "Release refused", message: error.failure.message, suggestion: error.failure.suggestion });
  }
  return c.redirect(`${executionPagePath(id)}?notice=${notices.issue(id, "released")}`, 303);
}

import { afterEach, describe, expect, test } from "bun:test";
import { buildFailure } from "../../runtime/execution/failure.ts";
import { loadPage, type FakeFetch, type LoadedPage } from "./_support/dom.ts";
import { event, executionHtml, ID, runningSnapshot } from "./_support/fixtures.ts";

const pages: LoadedPage[] = [];
afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
});

const unknown = buildFailure({ error_code: "internal", stage: "run", message: "The remote hung up.", retryability: "manual_reconcile", outcome_certainty: "unknown", request_id: "r-1", trace_id: "0".repeat(32) });

describe("execution page: reconcile", () => {
  test("a page open while a write ends with an unknown outcome shows the reconcile form from the server, and the form asks before it posts", async () => {
    const running = runningSnapshot({ effect: "write", cancellable: false });
    const ended = { ...running, state: "failed" as const, failure: unknown, finished_at: running.started_at, duration_ms: 5, last_sequence: 3 };
    // The page re-reads its sections from the server: it now renders the execution as ended.
    const fetch = (async (url: string) => ({ ok: true, status: 200, json: async () => ({}), text: async () => executionHtml(ended) })) as unknown as FakeFetch;
    const page = loadPage(executionHtml(running), { path: `/cockpit/executions/${ID}`, scripts: ["socket.js", "format.js", "refresh.js", "execution.js", "run-form.js"], fetch });
    pages.push(page);
    const doc = page.document;
    const section = () => doc.querySelector('[data-section="reconciliation"]') as HTMLElement;
    expect(section().hidden).toBe(true);
    expect(doc.querySelector("form.reconcile-form")).toBeNull();
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", schema_version: "1", subscribed: [ID], replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    socket.receive(event(3, "execution.completed", { state: "failed", failure: unknown, duration_ms: 5 }));
    await page.settle();
    const form = doc.querySelector("form.reconcile-form") as HTMLFormElement;
    expect(form).not.toBeNull();
    expect(section().textContent).toContain("Outcome unknown: reconcile");
    // Wired on arrival: submitting asks the question the server rendered.
    const button = form.querySelector('button[value="not_applied"]') as HTMLButtonElement;
    const Submit = (page.window as unknown as { SubmitEvent: typeof SubmitEvent }).SubmitEvent;
    form.dispatchEvent(new Submit("submit", { bubbles: true, cancelable: true, submitter: button }));
    expect(page.confirms).toHaveLength(1);
    expect(page.confirms[0]).toContain(`Record a reconciliation of ${ID}?`);
    expect((form.querySelector("[data-confirmed]") as HTMLInputElement).value).toBe("1");
  });
});

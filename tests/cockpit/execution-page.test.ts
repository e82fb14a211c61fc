import { afterEach, describe, expect, test } from "bun:test";
import { FAILURE_FIELDS } from "../../cockpit/components/failure-panel.tsx";
import { fakeFetch, loadPage, type LoadedPage } from "./_support/dom.ts";
import { event, executionHtml, ID, runningSnapshot } from "./_support/fixtures.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";

const pages: LoadedPage[] = [];

afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
});

/** The execution page, live: the fake socket is open and ready. */
function live(snapshot: ExecutionSnapshot = runningSnapshot(), options: { logLimit?: number; fetch?: ReturnType<typeof fakeFetch> } = {}) {
  const page = loadPage(executionHtml(snapshot, options), { path: `/cockpit/executions/${ID}`, scripts: ["socket.js", "format.js", "log-filter.js", "refresh.js", "execution.js"], fetch: options.fetch });
  pages.push(page);
  const socket = page.sockets[0]!;
  socket.open();
  socket.receive({ type: "stream.ready", schema_version: "1", subscribed: [ID], replayed: 0, truncated: false, heartbeat_ms: 20_000 });
  let next = snapshot.last_sequence + 1;
  const doc = page.document;
  return {
    page,
    doc,
    /** Sends the next event of this type. */
    send(type: string, data: Record<string, unknown> = {}) {
      socket.receive(event(next++, type, data));
    },
    text: (selector: string) => (doc.querySelector(selector)?.textContent ?? "").replace(/\s+/g, " ").trim(),
    hidden: (selector: string) => doc.querySelector(selector)!.hasAttribute("hidden"),
  };
}

describe("execution.js", () => {
  test("execution.js applies steps, progress, logs, streams, diagnostics and cancel requests to the page", () => {
    const x = live(runningSnapshot({ state: "queued", started_at: null, last_sequence: 1 }));
    expect(x.text('[data-slot="state"]')).toBe("○ Queued");
    x.send("execution.started");
    expect(x.text('[data-slot="state"]')).toBe("▶ Running");
    expect(x.text('[data-fact="started_at"]')).toBe("2026-09-08 01:02:03 UTC");

    x.send("execution.step", { id: "fetch", title: "Fetch things" });
    expect(x.text('[data-slot="steps"] tr[data-step-id="fetch"] [data-field="title"]')).toBe("Fetch things");
    expect(x.text('[data-slot="steps"] tr[data-step-id="fetch"] [data-field="state"]')).toBe("▶ Running");
    expect(x.hidden('[data-slot="steps"] [data-empty]')).toBe(true);
    x.send("execution.step_done", { id: "fetch", ok: false, message: "one was missing" });
    expect(x.text('tr[data-step-id="fetch"] [data-field="state"]')).toBe("✕ Failed");
    expect(x.text('tr[data-step-id="fetch"] [data-field="message"]')).toBe("one was missing");
    expect(x.text('tr[data-step-id="fetch"] [data-field="duration"]')).toBe("1 ms");

    x.send("execution.progress", { current: 3, total: 4, message: "three" });
    const bar = x.doc.querySelector('progress[data-slot="progress"]')!;
    expect([bar.getAttribute("value"), bar.getAttribute("max")]).toEqual(["3", "4"]);
    expect(x.text('[data-slot="progress-text"]')).toBe("3 of 4 (75%) — three");
    x.send("execution.progress", { current: 7 });
    expect(bar.hasAttribute("value")).toBe(false);
    expect(x.text('[data-slot="progress-text"]')).toBe("7 so far (total unknown)");

    x.send("execution.log", { level: "warn", message: "careful", truncated: true });
    const line = x.doc.querySelector('[data-slot="log"] .log-line')!;
    expect(line.getAttribute("data-level")).toBe("warn");
    expect(line.querySelector(".log-level")!.textContent).toBe("warn");
    expect(line.querySelector(".log-cut")!.textContent).toBe("(cut)");
    expect(x.hidden('[data-slot="log-empty"]')).toBe(true);

    x.send("execution.stream", { name: "stdout", chunk: "hello " });
    x.send("execution.stream", { name: "stdout", chunk: "world" });
    expect(x.hidden('[data-section="streams"]')).toBe(false);
    expect(x.text('[data-stream="stdout"] [data-stream-text]')).toBe("hello world");

    x.send("execution.diagnostic", { severity: "error", message: "bad line", file: "a/b.ts", line: 3, column: 9, code: "e1" });
    expect(x.text('[data-slot="diagnostics"] [data-field="severity"]')).toBe("✕ Error");
    expect(x.text('[data-slot="diagnostics"] [data-field="location"]')).toBe("a/b.ts:3:9");
    expect(x.text('[data-slot="diagnostics"] [data-field="code"]')).toBe("e1");

    x.send("execution.cancel_requested", { actor: { kind: "cockpit" } });
    expect(x.text('[data-slot="state"]')).toBe("◌ Cancelling");
    const button = x.doc.querySelector('[data-slot="cancel"] button')!;
    expect(button.hasAttribute("disabled")).toBe(true);
    expect(button.textContent).toBe("Cancel requested");
    expect(x.text('[data-slot="last-sequence"]')).toBe("11");
  });

  test("execution.js shows the output on success, and the Cancel button goes", () => {
    const x = live();
    expect(x.doc.querySelector('[data-slot="cancel"]')).not.toBeNull();
    expect(x.hidden('[data-section="output"]')).toBe(true);
    x.send("execution.completed", { state: "succeeded", output: { files: 3, digest: "abc" }, duration_ms: 1234 });
    expect(x.text('[data-slot="state"]')).toBe("✓ Succeeded");
    expect(x.hidden('[data-section="output"]')).toBe(false);
    expect(JSON.parse(x.doc.querySelector('[data-slot="output"]')!.textContent!)).toEqual({ files: 3, digest: "abc" });
    expect(x.text('[data-fact="duration"]')).toBe("1.23 s");
    expect(x.text('[data-fact="finished_at"]')).toBe("2026-09-08 01:02:03 UTC");
    expect(x.doc.querySelector('[data-slot="cancel"]')).toBeNull();
    expect(x.doc.querySelector("[data-docket-execution]")!.getAttribute("data-terminal")).toBe("true");
  });

  test("execution.js says an output too large for the live channel is on its way, and no more once the server's drawing of it is in place", async () => {
    const rows = Array.from({ length: 3 }, (_, i) => ({ name: `row ${i}`, size: i }));
    const ended = runningSnapshot({ state: "succeeded", finished_at: "2026-09-08T01:02:05.000Z", duration_ms: 5, output: rows, last_sequence: 3 });
    let answer: (html: string) => void = () => {};
    const fetch = fakeFetch(() => new Promise<string>((resolve) => (answer = resolve)));
    const x = live(runningSnapshot(), { fetch });
    x.send("execution.completed", { state: "succeeded", duration_ms: 5, output: { withheld: "too_large", bytes: 300_000, limit: 262_144, self: `/api/v1/executions/get?id=${ID}` } });
    const tooLarge = () => (x.doc.querySelector('[data-section="output"]')!.textContent ?? "").includes("too large for the live channel") || (x.doc.querySelector('[data-slot="notice"]')!.textContent ?? "").includes("too large");
    expect(tooLarge()).toBe(true);
    answer(executionHtml(ended));
    await x.page.settle();
    await x.page.settle();
    expect(tooLarge()).toBe(false);
    expect(x.doc.querySelectorAll('[data-section="output"] table tbody tr')).toHaveLength(3);
  });

  test("execution.js fills every field of the failure panel when the execution fails", () => {
    const x = live();
    const failure = {
      error_code: "verification_failed",
      stage: "run",
      message: "2 files differ",
      retryability: "never",
      outcome_certainty: "applied",
      correlation_id: "c-0123456789abcdef",
      request_id: "r-1",
      trace_id: "f".repeat(32),
      suggestion: "Fix the files.",
      context: { mismatches: 2 },
    };
    x.send("execution.completed", { state: "failed", failure, duration_ms: 10 });
    expect(x.text('[data-slot="state"]')).toBe("✕ Failed");
    expect(x.hidden('[data-section="failure"]')).toBe(false);
    expect(x.hidden('[data-section="output"]')).toBe(true);
    for (const { key } of FAILURE_FIELDS) {
      const shown = x.doc.querySelector(`[data-failure-field="${key}"]`)!.textContent!;
      expect(key === "context" ? JSON.parse(shown) : shown).toEqual((failure as Record<string, unknown>)[key]);
    }
  });

  test("execution.js shows an event type it does not know, with its type and data, instead of dropping it", () => {
    const x = live();
    expect(x.hidden('[data-section="other-events"]')).toBe(true);
    x.send("execution.checkpoint", { label: "<b>halfway</b>", at: 50 });
    expect(x.hidden('[data-section="other-events"]')).toBe(false);
    const item = x.doc.querySelector('[data-slot="other-events"] li')!;
    expect(item.querySelector('[data-field="type"]')!.textContent).toBe("execution.checkpoint");
    expect(item.querySelector('[data-field="sequence"]')!.textContent).toBe("#3");
    expect(JSON.parse(item.querySelector('[data-field="data"]')!.textContent!)).toEqual({ label: "<b>halfway</b>", at: 50 });
    expect(item.querySelector("b")).toBeNull();
    // The stream goes on after it.
    x.send("execution.log", { level: "info", message: "after" });
    expect(x.text('[data-slot="log"] .log-message')).toBe("after");
  });

  test("execution.js puts log lines in with textContent: injected markup stays text", () => {
    const x = live();
    const w = x.page.window as unknown as Record<string, unknown>;
    const hostile = `<img src=x onerror="window.pwned = true"><script>window.pwned = true</script>`;
    x.send("execution.log", { level: "error", message: hostile });
    x.send("execution.step", { id: "s", title: hostile });
    x.send("execution.diagnostic", { severity: "warning", message: hostile, file: hostile });
    x.send("execution.stream", { name: hostile, chunk: hostile });
    const main = x.doc.querySelector("[data-docket-execution]")!;
    expect(main.querySelectorAll("img, script").length).toBe(0);
    expect(x.doc.querySelector('[data-slot="log"] .log-message')!.textContent).toBe(hostile);
    expect(x.doc.querySelector('tr[data-step-id="s"] [data-field="title"]')!.textContent).toBe(hostile);
    expect(x.doc.querySelector('[data-slot="diagnostics"] [data-field="message"]')!.textContent).toBe(hostile);
    expect(x.doc.querySelector('[data-slot="streams"] h3')!.textContent).toBe(hostile);
    expect(w.pwned).toBeUndefined();
  });

  test("execution.js keeps the log bounded in the browser, counting the lines it lets go", () => {
    const x = live(runningSnapshot(), { logLimit: 5 });
    for (let i = 1; i <= 8; i++) x.send("execution.log", { level: "info", message: `line ${i}` });
    const lines = [...x.doc.querySelectorAll('[data-slot="log"] .log-message')].map((e) => e.textContent);
    expect(lines).toEqual(["line 4", "line 5", "line 6", "line 7", "line 8"]);
    expect(x.hidden('[data-slot="log-dropped"]')).toBe(false);
    expect(x.text('[data-slot="log-dropped"]')).toBe("3 earlier line(s) not shown.");
  });

  test("execution.js: Cancel posts to the rendered URL in the background and shows the receipt", async () => {
    const fetch = fakeFetch(() => ({ id: ID, state: "cancelling", cancellable: true, requested: true, message: "Cancellation requested." }));
    const x = live(runningSnapshot(), { fetch });
    const form = x.doc.querySelector('[data-slot="cancel"]') as HTMLFormElement;
    const submit = new (x.page.window as any).Event("submit", { cancelable: true });
    expect(form.dispatchEvent(submit)).toBe(false);
    await x.page.settle();
    expect(fetch.urls).toEqual([`http://127.0.0.1:4700/cockpit/executions/${ID}/cancel`]);
    expect(x.text('[data-slot="notice"]')).toBe("Cancellation requested.");
    expect(x.doc.querySelector('[data-slot="cancel"] button')!.hasAttribute("disabled")).toBe(true);
  });

  test("execution.js follows nothing on a finished execution's page", () => {
    const page = loadPage(executionHtml(runningSnapshot({ state: "succeeded", finished_at: runningSnapshot().started_at, output: {}, last_sequence: 3 })), {
      path: `/cockpit/executions/${ID}`,
      scripts: ["socket.js", "format.js", "execution.js"],
    });
    pages.push(page);
    expect(page.sockets).toHaveLength(0);
    expect(page.document.querySelector("[data-docket-connection]")!.getAttribute("data-state")).toBe("ended");
  });

  test("execution.js says when the server no longer retains events the page missed", async () => {
    // The history over HTTP starts at 6: events 4 and 5 are gone.
    const fetch = fakeFetch(() => ({ events: [event(6, "execution.log", { level: "info", message: "six" })], retained_from: 6, truncated: true, last_sequence: 6 }));
    const x = live(runningSnapshot(), { fetch });
    const socket = () => x.page.current()!;
    socket().receive(event(3, "execution.log", { level: "info", message: "three" }));
    socket().receive(event(7, "execution.log", { level: "info", message: "seven" }));
    socket().open();
    socket().receive({ type: "stream.ready", heartbeat_ms: 20_000 });
    socket().receive(event(7, "execution.log", { level: "info", message: "seven" }));
    await x.page.settle();
    expect([...x.doc.querySelectorAll('[data-slot="log"] .log-message')].map((e) => e.textContent)).toEqual(["three", "six", "seven"]);
    expect(x.text('[data-slot="missed"]')).toBe("Event(s) 4 to 5 are no longer retained by the server, so this page skipped them.");
  });

  test("execution.js names every range of events it skipped, counts them beside the lines it let go, and keeps saying so after a Cancel", async () => {
    // Over HTTP the history starts at 6, then at 12: events 4–5 and 9–11 are gone.
    let retainedFrom = 6;
    const fetch = fakeFetch((url) =>
      url.pathname.endsWith("/cancel") ? { id: ID, state: "cancelling", cancellable: true, requested: true, message: "Cancellation requested." } : { events: [event(retainedFrom, "execution.log", { level: "info", message: `line ${retainedFrom}` })], retained_from: retainedFrom, truncated: true, last_sequence: retainedFrom },
    );
    const x = live(runningSnapshot(), { fetch, logLimit: 2 });
    /** A gap the channel cannot mend twice over: read over HTTP. */
    async function skipTo(next: number) {
      x.page.current()!.receive(event(next, "execution.log", { level: "info", message: `line ${next}` }));
      x.page.current()!.open();
      x.page.current()!.receive({ type: "stream.ready", heartbeat_ms: 20_000 });
      x.page.current()!.receive(event(next, "execution.log", { level: "info", message: `line ${next}` }));
      await x.page.settle();
    }
    x.send("execution.log", { level: "info", message: "line 3" });
    await skipTo(7);
    x.page.current()!.receive(event(8, "execution.log", { level: "info", message: "line 8" }));
    retainedFrom = 12;
    await skipTo(13);
    expect([...x.doc.querySelectorAll('[data-slot="log"] .log-message')].map((e) => e.textContent)).toEqual(["line 12", "line 13"]);
    expect(x.text('[data-slot="missed"]')).toBe("Event(s) 4 to 5, 9 to 11 (5 in all) are no longer retained by the server, so this page skipped them.");
    expect(x.text('[data-slot="log-dropped"]')).toBe("4 earlier line(s) not shown, not counting any among the 5 skipped event(s).");
    const form = x.doc.querySelector('[data-slot="cancel"]') as HTMLFormElement;
    form.dispatchEvent(new (x.page.window as any).Event("submit", { cancelable: true }));
    await x.page.settle();
    expect(x.text('[data-slot="notice"]')).toBe("Cancellation requested.");
    expect(x.text('[data-slot="missed"]')).toContain("(5 in all)");
  });

  test("execution.js puts the server's log lines and their count in place once the execution ended: what a reload shows", async () => {
    const tail = [12, 13].map((sequence) => ({ sequence, timestamp: "2026-09-08T01:02:04.000Z", level: "info" as const, message: `line ${sequence}` }));
    const ended = runningSnapshot({ state: "succeeded", finished_at: "2026-09-08T01:02:05.000Z", duration_ms: 2000, output: {}, log: tail, log_dropped: 9, last_sequence: 14 });
    const fetch = fakeFetch((url) => (url.pathname.startsWith("/api/") ? { events: [event(14, "execution.completed", { state: "succeeded", duration_ms: 2000, output: {} })], retained_from: 14, truncated: true, last_sequence: 14 } : executionHtml(ended, { logLimit: 2 })));
    const x = live(runningSnapshot(), { fetch, logLimit: 2 });
    // The page saw lines 3 to 6 of them; the others were in events it skipped.
    for (let i = 3; i <= 6; i++) x.send("execution.log", { level: "info", message: `line ${i}` });
    expect(x.text('[data-slot="log-dropped"]')).toBe("2 earlier line(s) not shown.");
    x.page.current()!.receive(event(14, "execution.completed", { state: "succeeded", duration_ms: 2000, output: {} }));
    x.page.current()!.open();
    x.page.current()!.receive({ type: "stream.ready", heartbeat_ms: 20_000 });
    x.page.current()!.receive(event(14, "execution.completed", { state: "succeeded", duration_ms: 2000, output: {} }));
    // The gap read over HTTP, then the page's sections re-read.
    await x.page.settle();
    await x.page.settle();
    expect(x.text('[data-slot="log-dropped"]')).toBe("9 earlier line(s) not shown.");
    expect([...x.doc.querySelectorAll('[data-slot="log"] .log-message')].map((e) => e.textContent)).toEqual(["line 12", "line 13"]);
  });
});

describe("execution page: a cancel nobody asked for", () => {
  test("an execution cancelling because its deadline passed says so where the Cancel control was, cancellable or not (checking tester, session 42)", () => {
    for (const cancellable of [true, false]) {
      const html = executionHtml(runningSnapshot({ state: "cancelling", cancellable, cancel_requested: { actor: { kind: "http" }, at: "2026-09-08T01:02:04.000Z", reason: "deadline_ms" } }));
      const doc = loadPage(html, { path: `/cockpit/executions/${ID}`, scripts: [] }).document;
      expect(doc.querySelector('[data-slot="cancel"]')).toBeNull();
      expect(doc.querySelector('[data-slot="cancel-note"]')!.textContent).toBe("deadline_ms passed: the handler is asked to stop.");
    }
    // Ended: the summary says it was asked to stop, and why (checking tester, session 43).
    const ended = loadPage(executionHtml(runningSnapshot({ state: "succeeded", finished_at: "2026-09-08T01:02:05.000Z", output: {}, cancel_requested: { actor: { kind: "http" }, at: "2026-09-08T01:02:04.000Z", reason: "deadline_ms" } })), { path: `/cockpit/executions/${ID}`, scripts: [] }).document;
    expect(ended.querySelector('[data-fact="cancel-asked"]')!.textContent).toBe("deadline_ms passed: the handler was asked to stop (2026-09-08 01:02:04 UTC)");
    const askedEnded = loadPage(executionHtml(runningSnapshot({ state: "cancelled", finished_at: "2026-09-08T01:02:05.000Z", cancel_requested: { actor: { kind: "cockpit" }, at: "2026-09-08T01:02:04.000Z" } })), { path: `/cockpit/executions/${ID}`, scripts: [] }).document;
    expect(askedEnded.querySelector('[data-fact="cancel-asked"]')!.textContent).toStartWith("by ");
    // Still cancelling: drawn hidden, for execution.js to show once it ends.
    expect((loadPage(executionHtml(runningSnapshot({ state: "cancelling", cancel_requested: { actor: { kind: "http" }, at: "2026-09-08T01:02:04.000Z" } })), { path: `/cockpit/executions/${ID}`, scripts: [] }).document.querySelector('[data-fact-holder="cancel-asked"]') as HTMLElement).hidden).toBe(true);
    // Cancelled while queued: no cancel_requested, who asked is in the failure's context.
    const failure = { error_code: "cancelled", stage: "queue" as const, message: "m", retryability: "safe" as const, outcome_certainty: "not_applied" as const, correlation_id: "c", request_id: "r", trace_id: "t", suggestion: "s", context: { cancelled_by: { kind: "mcp", client: "agent" } } };
    const queued = loadPage(executionHtml(runningSnapshot({ state: "cancelled", started_at: null, finished_at: "2026-09-08T01:02:05.000Z", failure })), { path: `/cockpit/executions/${ID}`, scripts: [] }).document;
    expect(queued.querySelector('[data-fact="cancel-asked"]')!.textContent).toBe("by MCP (agent) (2026-09-08 01:02:05 UTC)");
    // Asked by someone: the disabled button, as before.
    const asked = loadPage(executionHtml(runningSnapshot({ state: "cancelling" })), { path: `/cockpit/executions/${ID}`, scripts: [] }).document;
    expect((asked.querySelector('[data-slot="cancel"] button') as HTMLButtonElement).textContent).toBe("Cancel requested");
  });
});

describe("execution page: an output table cut to its first rows", () => {
  test("says the header sorts the rows shown, and where every row is: the JSON view only when it is not cut too (cockpit tester, session 43)", () => {
    const caption = (rows: number, width: number) => {
      const output = Array.from({ length: rows }, (_, i) => ({ i, text: "x".repeat(width) }));
      const html = executionHtml(runningSnapshot({ state: "succeeded", finished_at: "2026-09-08T01:02:05.000Z", output }));
      const doc = loadPage(html, { path: `/cockpit/executions/${ID}`, scripts: [] }).document;
      return doc.querySelector(".output-table p")!.textContent!.replace(/\s+/g, " ").trim();
    };
    expect(caption(600, 4)).toBe("600 row(s); the first 500 are shown (a column's header sorts these), the JSON view has every one.");
    expect(caption(5000, 100)).toBe("5000 row(s); the first 500 are shown (a column's header sorts these), the JSON view is cut too: every one is in the API's answer (the links on this page).");
    // Bidirectional controls are written as six-character escapes in the JSON view: counted so (checking tester).
    const bidi = Array.from({ length: 600 }, (_, i) => ({ i, name: "\u202e".repeat(20) + "x".repeat(300) }));
    const doc = loadPage(executionHtml(runningSnapshot({ state: "succeeded", finished_at: "2026-09-08T01:02:05.000Z", output: bidi })), { path: `/cockpit/executions/${ID}`, scripts: [] }).document;
    expect(doc.querySelector(".output-table p")!.textContent!.replace(/\s+/g, " ").trim()).toEndWith("the JSON view is cut too: every one is in the API's answer (the links on this page).");
  });
});

describe("execution page: a run a crash interrupted", () => {
  test("its steps end where the run stopped (its start plus its duration), not at the restart that ended it minutes later (cockpit tester, session 43)", () => {
    const steps = [
      { id: "one", title: "One", state: "succeeded" as const, message: null, started_at: "2026-09-08T01:02:03.000Z", finished_at: "2026-09-08T01:02:05.000Z" },
      { id: "two", title: "Two", state: "running" as const, message: null, started_at: "2026-09-08T01:02:05.000Z", finished_at: null },
    ];
    // Ran 6 s, its last event then; the next server start ended it 60 s later.
    const snapshot = runningSnapshot({ state: "failed", started_at: "2026-09-08T01:02:03.000Z", finished_at: "2026-09-08T01:03:09.000Z", duration_ms: 6000, steps });
    const doc = loadPage(executionHtml(snapshot), { path: `/cockpit/executions/${ID}`, scripts: [] }).document;
    const text = (selector: string) => doc.querySelector(selector)!.textContent!.replace(/\s+/g, " ").trim();
    expect(text('[data-section="timeline"] p')).toStartWith("2 step(s) over 6.00 s.");
    const rows = [...doc.querySelectorAll('[data-section="steps"] td[data-field="duration"]')].map((cell) => cell.textContent);
    expect(rows).toEqual(["2.00 s", "4.00 s"]);
  });
});

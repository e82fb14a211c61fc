import { afterEach, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { colourSpans, MAX_COLOUR_SEQUENCES } from "../../cockpit/ansi.ts";
import { loadPage, type FakeFetch, type LoadedPage } from "./_support/dom.ts";
import { event, executionHtml, ID, runningSnapshot, stamp } from "./_support/fixtures.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import type { ArtifactInfo } from "../../runtime/execution/plane.ts";
import type { LogLevel } from "../../cockpit/log-filter.ts";
import { defaultLimits } from "../../runtime/execution/limits.ts";
import { createMemoryStore } from "../../runtime/store/memory-store.ts";
import { historyExtras, STREAMS_SHOWN } from "../../cockpit/history-extras.ts";

const pages: LoadedPage[] = [];

afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
});

const SCRIPTS = ["socket.js", "format.js", "anser.js", "ansi.js", "log-filter.js", "output-table.js", "refresh.js", "execution.js"] as const;

/** The execution page with every one of its scripts, live on a fake socket. */
function live(query = "") {
  // The server fills the filter form from the page's query, as it would.
  const params = new URLSearchParams(query);
  const logFilter = { level: (params.get("log_level") ?? "debug") as LogLevel, query: params.get("log_q") ?? "" };
  const page = loadPage(executionHtml(runningSnapshot(), { logFilter }), { path: `/cockpit/executions/${ID}${query}`, scripts: [...SCRIPTS] });
  pages.push(page);
  const socket = page.sockets[0]!;
  socket.open();
  socket.receive({ type: "stream.ready", schema_version: "1", subscribed: [ID], replayed: 0, truncated: false, heartbeat_ms: 20_000 });
  let next = runningSnapshot().last_sequence + 1;
  return {
    doc: page.document,
    window: page.window as unknown as { docket: { colourSpans(text: string): unknown } },
    send(type: string, data: Record<string, unknown>) {
      socket.receive(event(next++, type, data));
    },
  };
}

describe("execution page scripts: colour and filter", () => {
  test("the browser's colour runs are the server's, for any mix of text and colour codes (property)", () => {
    const { window } = live();
    const piece = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom("\u001b[31m", "\u001b[1;32m", "\u001b[0m", "\u001b[7m", "\u001b[44m", "\u001b[2m", "\u001b[38;5;200m", "\u001b[38;2;1;2;3m", "\u001b[9m", "\u001b[91m", "<b>", "&amp;"),
      // Any 256-colour or true-colour sequence, foreground or background.
      fc.tuple(fc.constantFrom(38, 48), fc.integer({ min: 0, max: 255 })).map(([side, n]) => `\u001b[${side};5;${n}m`),
      fc.tuple(fc.constantFrom(38, 48), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 })).map(([side, r, g, b]) => `\u001b[${side};2;${r};${g};${b}m`),
      // The colon (sub-parameter) forms, and parameters made of digits, colons and semicolons at random.
      fc.tuple(fc.constantFrom(38, 48), fc.integer({ min: 0, max: 255 })).map(([side, n]) => `\u001b[${side}:5:${n}m`),
      fc.tuple(fc.constantFrom("38:2::", "48:2:", "38:2:0:"), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 })).map(([head, r, g]) => `\u001b[${head}${r}:${g}:7m`),
      fc.constantFrom("\u001b[4:3m", "\u001b[4:0m", "\u001b[58:5:1m", "\u001b[1;38:5:46;4m"),
      fc.array(fc.constantFrom("1", "2", "5", "38", "48", ":", ";", ""), { maxLength: 8 }).map((parts) => `\u001b[${parts.join("")}m`),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 10 }), (pieces) => {
        const text = pieces.join("");
        expect(window.docket.colourSpans(text)).toEqual(colourSpans(text));
      }),
      { numRuns: 300 },
    );
    // Around the bound of sequences a text is painted with.
    fc.assert(
      fc.property(fc.array(piece, { minLength: 40, maxLength: 160 }), (pieces) => {
        const text = pieces.join("");
        expect(window.docket.colourSpans(text)).toEqual(colourSpans(text));
      }),
      { numRuns: 40 },
    );
  });

  test("a text is painted with its first MAX_COLOUR_SEQUENCES colour sequences; the rest is one plain run, on the server and in the browser (cockpit tester, session 48: 600 a line held the server 4 s a page)", () => {
    const { window } = live();
    const text = "\u001b[31mr\u001b[32mg".repeat(100) + "\u001b[1mtail";
    const spans = colourSpans(text);
    expect(spans.filter((span) => span.classes.length > 0)).toHaveLength(MAX_COLOUR_SEQUENCES);
    expect(spans.at(-1)).toEqual({ text: "rg".repeat(100 - MAX_COLOUR_SEQUENCES / 2) + "tail", classes: [] });
    expect(window.docket.colourSpans(text)).toEqual(spans);
  });

  test("colourSpans paints 256-colour and true-colour runs in the nearest basic colour, by hue", () => {
    const classesOf = (sequence: string) => colourSpans(`${sequence}x\u001b[0m`)[0]!.classes;
    expect(classesOf("\u001b[38;5;9m")).toEqual(["ansi-bright-red-fg"]);
    expect(classesOf("\u001b[38;5;2m")).toEqual(["ansi-green-fg"]);
    expect(classesOf("\u001b[38;5;196m")).toEqual(["ansi-bright-red-fg"]);
    expect(classesOf("\u001b[38;5;160m")).toEqual(["ansi-red-fg"]);
    expect(classesOf("\u001b[38;5;17m")).toEqual(["ansi-blue-fg"]);
    expect(classesOf("\u001b[38;5;208m")).toEqual(["ansi-bright-yellow-fg"]);
    expect(classesOf("\u001b[38;5;244m")).toEqual(["ansi-bright-black-fg"]);
    expect(classesOf("\u001b[48;5;22m")).toEqual(["ansi-green-bg"]);
    expect(classesOf("\u001b[38;2;200;30;30m")).toEqual(["ansi-red-fg"]);
    expect(classesOf("\u001b[38;2;65;105;225m")).toEqual(["ansi-bright-blue-fg"]);
    expect(classesOf("\u001b[48;2;250;250;250m")).toEqual(["ansi-bright-white-bg"]);
    expect(classesOf("\u001b[1;38;2;0;180;0m")).toEqual(["ansi-green-fg", "ansi-bold"]);
  });

  test("colourSpans paints the colon forms of 256-colour and true-colour runs as their semicolon forms, and shows none of them as text", () => {
    const painted = (text: string) => colourSpans(`${text}colon\u001b[0m`);
    expect(painted("\u001b[38:5:196m")).toEqual(painted("\u001b[38;5;196m"));
    expect(painted("\u001b[38:5:196m")).toEqual([{ text: "colon", classes: ["ansi-bright-red-fg"] }]);
    expect(painted("\u001b[38:2::255:0:0m")).toEqual(painted("\u001b[38;2;255;0;0m"));
    expect(painted("\u001b[48:2:0:180:0m")).toEqual([{ text: "colon", classes: ["ansi-green-bg"] }]);
    expect(painted("\u001b[1;38:5:17;4:3m")).toEqual([{ text: "colon", classes: ["ansi-blue-fg", "ansi-bold", "ansi-underline"] }]);
    // An underline colour has no class: left out, and never a reset or text.
    expect(colourSpans("\u001b[31mred\u001b[58:5:1m still red")).toEqual([{ text: "red still red", classes: ["ansi-red-fg"] }]);
    for (const sequence of ["\u001b[38:5:196m", "\u001b[38:2::255:0:0m", "\u001b[58:2::1:2:3m", "\u001b[4:3m"]) {
      expect(painted(sequence).map((span) => span.text).join("")).toBe("colon");
    }
  });

  test("a live log line is painted in its colours as text, and obeys the filter already chosen", () => {
    const x = live();
    x.send("execution.log", { level: "error", message: "\u001b[31mboom\u001b[0m <i>x</i>" });
    const lines = () => [...x.doc.querySelectorAll(".log-line")] as HTMLElement[];
    const line = lines().at(-1)!;
    expect(line.querySelector(".ansi-red-fg")!.textContent).toBe("boom");
    expect(line.querySelector(".log-message")!.textContent).toBe("boom <i>x</i>");
    expect(line.querySelector("i")).toBeNull();
    // Filter to errors: a new info line arrives hidden, a new error line visible.
    const level = x.doc.querySelector('[name="log_level"]') as HTMLSelectElement;
    level.value = "error";
    level.dispatchEvent(new (x.doc.defaultView as unknown as { Event: typeof Event }).Event("change"));
    x.send("execution.log", { level: "info", message: "chatter" });
    x.send("execution.log", { level: "error", message: "another failure" });
    const [chatter, failure] = lines().slice(-2);
    expect(chatter!.textContent).toContain("chatter");
    expect(chatter!.hidden).toBe(true);
    expect(failure!.hidden).toBe(false);
  });

  test("the count of matching lines follows the lines that arrive live, for a search in the page's query", () => {
    const x = live("?log_q=red");
    const count = () => x.doc.querySelector('[data-slot="log-matches"]')!.textContent;
    x.send("execution.log", { level: "info", message: "a red line" });
    x.send("execution.log", { level: "info", message: "a blue line" });
    expect(count()).toBe("1 of 2 line(s) match.");
    x.send("execution.log", { level: "error", message: "\u001b[31mRED\u001b[0m again" });
    expect(count()).toBe("2 of 3 line(s) match.");
  });

  test("a deadline passing live turns the Cancel control into why it is cancelling; a cancel asked keeps the disabled button (checking tester, session 42)", () => {
    const x = live();
    expect(x.doc.querySelector('[data-slot="cancel"] button')).not.toBeNull();
    x.send("execution.cancel_requested", { actor: { kind: "http" }, reason: "deadline_ms" });
    expect(x.doc.querySelector('[data-slot="cancel"]')).toBeNull();
    expect(x.doc.querySelector('[data-slot="cancel-note"]')!.textContent).toBe("deadline_ms passed: the handler is asked to stop.");
    const asked = live();
    asked.send("execution.cancel_requested", { actor: { kind: "http" } });
    expect((asked.doc.querySelector('[data-slot="cancel"] button') as HTMLButtonElement).textContent).toBe("Cancel requested");
  });

  test("the 'cancel requested' notice goes once the execution has ended, which it said the page would show; a refusal stays (cockpit tester, session 43)", () => {
    const x = live();
    const view = (x.window as unknown as { docket: { executionView: { notice(kind: string, text: string): void } } }).docket.executionView;
    view.notice("success", "Cancellation of it was requested; follow its events for the outcome.");
    x.send("execution.cancel_requested", { actor: { kind: "cockpit" } });
    expect(x.doc.querySelector('[data-slot="notice"]')!.hasAttribute("hidden")).toBe(false);
    x.send("execution.completed", { state: "cancelled", duration_ms: 10, failure: { error_code: "cancelled", stage: "run", message: "m", retryability: "safe", outcome_certainty: "not_applied", correlation_id: "c", request_id: "r", trace_id: "t", suggestion: "s", context: {} } });
    expect(x.doc.querySelector('[data-slot="notice"]')!.hasAttribute("hidden")).toBe(true);
    const refused = live();
    const other = (refused.window as unknown as { docket: { executionView: { notice(kind: string, text: string): void } } }).docket.executionView;
    other.notice("error", "Cancel was not requested.");
    refused.send("execution.completed", { state: "succeeded", duration_ms: 10, output: {} });
    expect(refused.doc.querySelector('[data-slot="notice"]')!.hasAttribute("hidden")).toBe(false);
  });

  test("once a cancelled execution ends, the summary says who asked it to stop and when, as a reload does, and a cancel while queued names who asked (cockpit tester, session 50)", () => {
    const holder = (doc: Document) => doc.querySelector('[data-fact-holder="cancel-asked"]') as HTMLElement;
    const failure = { error_code: "cancelled", stage: "run", message: "m", retryability: "safe", outcome_certainty: "not_applied", correlation_id: "c", request_id: "r", trace_id: "t", suggestion: "s", context: {} };
    const x = live();
    expect(holder(x.doc).hidden).toBe(true);
    x.send("execution.cancel_requested", { actor: { kind: "cockpit" } });
    // Cancelling: the control says it; the summary waits for the end, as the server draws it.
    expect(holder(x.doc).hidden).toBe(true);
    x.send("execution.completed", { state: "cancelled", duration_ms: 10, failure });
    expect(holder(x.doc).hidden).toBe(false);
    expect(x.doc.querySelector('[data-fact="cancel-asked"]')!.textContent).toMatch(/^by cockpit \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$/);
    const deadline = live();
    deadline.send("execution.cancel_requested", { actor: { kind: "http" }, reason: "deadline_ms" });
    deadline.send("execution.completed", { state: "succeeded", duration_ms: 10, output: {} });
    expect(deadline.doc.querySelector('[data-fact="cancel-asked"]')!.textContent).toStartWith("deadline_ms passed: the handler was asked to stop (");
    const queued = live();
    queued.send("execution.completed", { state: "cancelled", duration_ms: 0, failure: { ...failure, stage: "queue", context: { cancelled_by: { kind: "mcp", client: "agent" } } } });
    expect(holder(queued.doc).hidden).toBe(false);
    expect(queued.doc.querySelector('[data-fact="cancel-asked"]')!.textContent).toStartWith("by MCP (agent) (");
    const plain = live();
    plain.send("execution.completed", { state: "succeeded", duration_ms: 10, output: {} });
    expect(holder(plain.doc).hidden).toBe(true);
  });

  test("a step still running when the execution is cancelled reads Stopped, not Running", () => {
    const x = live();
    x.send("execution.step", { id: "slow", title: "Slow step" });
    expect(x.doc.querySelector('tr[data-step-id="slow"] [data-step-state="running"]')).not.toBeNull();
    x.send("execution.cancel_requested", { actor: { kind: "http" } });
    x.send("execution.completed", { state: "cancelled", duration_ms: 12, failure: { error_code: "cancelled", message: "Cancelled.", stage: "run", retryability: "safe", outcome_certainty: "not_applied", correlation_id: "c-1", request_id: "r-1", trace_id: "t", context: {} } });
    expect(x.doc.querySelector('tr[data-step-id="slow"] [data-step-state="running"]')).toBeNull();
    expect(x.doc.querySelector('tr[data-step-id="slow"] [data-step-state="stopped"]')!.textContent).toContain("Stopped");
    // It lasted from its start (sequence 3) to the end (sequence 5): the timeline says the same.
    expect(x.doc.querySelector('tr[data-step-id="slow"] [data-field="duration"]')!.textContent).toBe("2 ms");
  });
});

/**
 * The execution page live on a fake socket, whose section refreshes are answered by the server's
 * rendering of `snapshot()` at the clock's time: what a re-read would bring.
 */
function liveServed(snapshot: () => ExecutionSnapshot, artifacts: () => ArtifactInfo[] = () => []) {
  const urls: string[] = [];
  let page: LoadedPage | undefined;
  const now = () => page!.clock.now().getTime();
  const fetch = (async (url: string) => {
    urls.push(url);
    const html = executionHtml(snapshot(), { now: now(), artifacts: artifacts() });
    return { ok: true, status: 200, text: async () => html, json: async () => ({}) };
  }) as unknown as FakeFetch;
  page = loadPage(executionHtml(snapshot(), { now: Date.parse(stamp(0)), artifacts: artifacts() }), { path: `/cockpit/executions/${ID}`, scripts: [...SCRIPTS], fetch });
  pages.push(page);
  const socket = page.sockets[0]!;
  socket.open();
  socket.receive({ type: "stream.ready", schema_version: "1", subscribed: [ID], replayed: 0, truncated: false, heartbeat_ms: 20_000 });
  return { page, urls, doc: page.document, send: (sequence: number, type: string, data: Record<string, unknown>) => socket.receive(event(sequence, type, data)) };
}

describe("execution page scripts: the timeline", () => {
  test("the timeline of a running step is re-read every second with no event arriving, and no more once the execution has ended", async () => {
    const step = { id: "two", title: "Step two", state: "running" as const, message: null, started_at: stamp(0), finished_at: null };
    let snapshot = runningSnapshot({ steps: [step] });
    const x = liveServed(() => snapshot);
    const time = () => x.doc.querySelector('.timeline-row[data-step-id="two"] .timeline-time')!.textContent;
    // The manual clock starts at stamp(0): the page was drawn at the step's start.
    expect(time()).toBe("running · 0 ms");
    for (const seconds of [1, 2, 3]) {
      x.page.clock.advance(1000);
      await x.page.settle();
      expect(time()).toBe(`running · ${seconds}.00 s`);
    }
    expect(x.urls.length).toBe(3);
    // Only the timeline is asked for, not the page.
    expect(x.urls[0]).toBe(`/cockpit/executions/${ID}?section=timeline`);

    snapshot = runningSnapshot({ state: "succeeded", finished_at: stamp(3500), steps: [{ ...step, state: "succeeded", finished_at: stamp(3500) }] });
    x.send(3, "execution.completed", { state: "succeeded", duration_ms: 3500, output: {} });
    await x.page.settle();
    const afterEnd = x.urls.length;
    expect(time()).toBe("done · 3.50 s");
    x.page.clock.advance(5000);
    await x.page.settle();
    expect(x.urls.length).toBe(afterEnd);
  });
});

describe("execution page scripts: artifacts", () => {
  test("a running execution's artifacts appear as it writes them, with no event to say so; the same files leave the panel untouched; none are asked once it ended (cockpit tester, session 43)", async () => {
    let snapshot = runningSnapshot();
    let files: ArtifactInfo[] = [];
    const x = liveServed(() => snapshot, () => files);
    const panel = () => x.doc.querySelector('[data-section="artifacts"]') as HTMLElement;
    expect(panel().hidden).toBe(true);
    files = [{ name: "report.txt", bytes: 12, sha256: "a".repeat(64) }];
    x.page.clock.advance(5000);
    await x.page.settle();
    expect(x.urls.some((url) => url.includes("section=artifacts"))).toBe(true);
    expect(panel().hidden).toBe(false);
    expect(panel().querySelector('[data-artifact="report.txt"]')).not.toBeNull();
    // Read again with the same files: the panel in place is the one drawn before.
    const drawn = panel();
    x.page.clock.advance(5000);
    await x.page.settle();
    expect(x.urls.filter((url) => url.includes("section=artifacts")).length).toBe(2);
    expect(panel()).toBe(drawn);

    snapshot = runningSnapshot({ state: "succeeded", finished_at: stamp(10_500) });
    x.send(3, "execution.completed", { state: "succeeded", duration_ms: 10_500, output: {} });
    await x.page.settle();
    const afterEnd = x.urls.length;
    x.page.clock.advance(20_000);
    await x.page.settle();
    expect(x.urls.length).toBe(afterEnd);
  });
});

describe("execution page scripts: an event whose whole data the server withheld", () => {
  test("draws no 'undefined' step or stream from it: the sections it changed are read from the server (checking tester, session 43)", async () => {
    const id = "s".repeat(1000);
    const step = { id, title: "title", state: "running" as const, message: null, started_at: stamp(0), finished_at: null };
    let snapshot = runningSnapshot();
    const x = liveServed(() => snapshot);
    const marker = { withheld: "too_large", bytes: 1100, limit: 1024, self: `/api/v1/executions/get?id=${ID}` };
    snapshot = runningSnapshot({ steps: [step] });
    x.send(3, "execution.step", marker);
    x.send(4, "execution.stream", marker);
    await x.page.settle();
    x.page.clock.advance(1000);
    await x.page.settle();
    const page = x.doc.body.textContent!;
    expect(page).not.toContain("undefined");
    expect(x.urls.some((url) => url.includes("section=steps"))).toBe(true);
    expect(x.doc.querySelector('[data-section="steps"]')!.textContent).toContain("title");
  });
});

describe("execution page scripts: the timeline of an execution that cannot be cancelled", () => {
  test("the timeline's clock stops when an execution without a Cancel button ends", async () => {
    const step = { id: "one", title: "Step one", state: "running" as const, message: null, started_at: stamp(0), finished_at: null };
    let snapshot = runningSnapshot({ cancellable: false, steps: [step] });
    const x = liveServed(() => snapshot);
    expect(x.doc.querySelector('[data-slot="cancel"]')).toBeNull();
    x.page.clock.advance(1000);
    await x.page.settle();
    expect(x.urls.length).toBe(1);
    snapshot = runningSnapshot({ cancellable: false, state: "succeeded", finished_at: stamp(1500), steps: [{ ...step, state: "succeeded", finished_at: stamp(1500) }] });
    x.send(3, "execution.completed", { state: "succeeded", duration_ms: 1500, output: {} });
    await x.page.settle();
    expect(x.doc.querySelector("[data-docket-execution]")!.getAttribute("data-terminal")).toBe("true");
    const afterEnd = x.urls.length;
    x.page.clock.advance(5000);
    await x.page.settle();
    expect(x.urls.length).toBe(afterEnd);
  });
});

describe("execution page scripts: progress", () => {
  const completed = { state: "succeeded", duration_ms: 5, output: {} };

  test("a page watched live takes its empty Progress panel away when the execution ends without reporting any", () => {
    const x = live();
    expect(x.doc.querySelector('[data-slot="progress-text"]')!.textContent).toBe("No progress reported yet.");
    x.send("execution.completed", completed);
    expect(x.doc.querySelectorAll('[data-section="progress"], [data-slot="progress"]').length).toBe(0);
  });

  test("a page watched live keeps the progress reported, even when it arrives in the same frame as the end", () => {
    const x = live();
    const view = (x.window as unknown as { docket: { executionView: { apply(e: unknown): void; flush(): void } } }).docket.executionView;
    view.apply(event(3, "execution.progress", { current: 2, total: 2, message: "both" }));
    view.apply(event(4, "execution.completed", completed));
    view.flush();
    expect(x.doc.querySelector('[data-slot="progress-text"]')!.textContent).toBe("2 of 2 (100%) — both");
  });
});

describe("execution page without scripts", () => {
  test("the log filter in the query is applied by the server: hidden lines, a count, the form filled", () => {
    const snapshot = runningSnapshot({
      log: [
        { sequence: 3, timestamp: "2026-09-08T01:02:04.000Z", level: "info", message: "fetching \u001b[1mindex\u001b[0m" },
        { sequence: 4, timestamp: "2026-09-08T01:02:05.000Z", level: "warn", message: "slow mirror" },
        { sequence: 5, timestamp: "2026-09-08T01:02:06.000Z", level: "error", message: "index failed" },
      ],
    });
    const page = loadPage(executionHtml(snapshot, { logFilter: { level: "warn", query: "INDEX" } }), { path: `/cockpit/executions/${ID}`, scripts: [] });
    pages.push(page);
    const shown = [...page.document.querySelectorAll(".log-line")].filter((line) => !(line as HTMLElement).hidden).map((line) => line.getAttribute("data-sequence"));
    expect(shown).toEqual(["5"]);
    expect(page.document.querySelector('[data-slot="log-matches"]')!.textContent).toBe("1 of 3 line(s) match.");
    expect((page.document.querySelector('[name="log_q"]') as HTMLInputElement).value).toBe("INDEX");
    expect(page.document.querySelector(".log-line[data-sequence='3'] .ansi-bold")!.textContent).toBe("index");
  });

  test("a finished execution with no progress shows no empty progress bar; cancelled reads as cancelled", () => {
    const failure = { error_code: "cancelled", message: "Cancelled by the cockpit.", stage: "run", retryability: "safe", outcome_certainty: "not_applied", correlation_id: "c-1", request_id: "r-1", trace_id: "t", context: {}, suggestion: "Run it again when needed." } as const;
    const html = executionHtml(runningSnapshot({ state: "cancelled", finished_at: "2026-09-08T01:02:09.000Z", progress: null, failure, steps: [{ id: "a", title: "A", state: "running", message: null, started_at: "2026-09-08T01:02:04.000Z", finished_at: null }] }));
    const page = loadPage(html, { path: `/cockpit/executions/${ID}`, scripts: [] });
    pages.push(page);
    const doc = page.document;
    expect(doc.querySelector('[data-slot="progress"]')).toBeNull();
    expect(doc.querySelector('[data-slot="failure-title"]')!.textContent).toBe("Cancelled");
    expect(doc.querySelector('[data-section="failure"]')!.classList.contains("failure-cancelled")).toBe(true);
    expect(doc.querySelector('tr[data-step-id="a"] [data-step-state="stopped"]')).not.toBeNull();
    expect(doc.querySelector('.timeline-row[data-step-state="stopped"]')).not.toBeNull();
    // Stopped at the execution's end, 5 s after it began: the table and the timeline say so alike.
    expect(doc.querySelector('tr[data-step-id="a"] [data-field="duration"]')!.textContent).toBe("5.00 s");
    expect(doc.querySelector('.timeline-row[data-step-id="a"] .timeline-time')!.textContent).toBe("stopped · 5.00 s");
  });
});

describe("execution page scripts: bounded steps and diagnostics", () => {
  const STEP_LIMIT = 4;
  const DIAGNOSTIC_LIMIT = 3;
  type Draft = { type: "execution.step" | "execution.step_done" | "execution.diagnostic"; data: Record<string, unknown> };
  const draft = fc.oneof(
    fc.constantFrom("a", "b", "c", "d", "e").map((id): Draft => ({ type: "execution.step", data: { id, title: `Step ${id}` } })),
    fc.tuple(fc.constantFrom("a", "b", "c", "d", "e", "f"), fc.boolean()).map(([id, ok]): Draft => ({ type: "execution.step_done", data: { id, ok } })),
    fc.nat(99).map((n): Draft => ({ type: "execution.diagnostic", data: { severity: "warning", message: `finding ${n}` } })),
  );

  /** What a page shows of steps and diagnostics: rows and the notes of what was let go. */
  function shown(doc: Document) {
    const text = (selector: string) => {
      const element = doc.querySelector(selector) as HTMLElement;
      return element.hidden ? "" : (element.textContent ?? "").trim();
    };
    return {
      steps: [...doc.querySelectorAll('[data-slot="steps"] tr[data-step-id]')].map((row) => `${row.getAttribute("data-step-id")}:${row.querySelector("[data-step-state]")!.getAttribute("data-step-state")}`),
      stepsDropped: text('[data-slot="steps-dropped"]'),
      diagnostics: [...doc.querySelectorAll('[data-slot="diagnostics"] tr[data-diagnostic] [data-field="message"]')].map((cell) => cell.textContent),
      diagnosticsDropped: text('[data-slot="diagnostics-dropped"]'),
    };
  }

  test("a page watched live keeps the snapshot's bounds on steps and diagnostics and says what it let go, as a reload would (property)", async () => {
    const limits = { ...defaultLimits(), steps_retained: STEP_LIMIT, diagnostics_retained: DIAGNOSTIC_LIMIT };
    const options = { stepLimit: STEP_LIMIT, diagnosticLimit: DIAGNOSTIC_LIMIT };
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(draft, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (frames) => {
        const store = createMemoryStore({ limits });
        store.create({ id: ID, capability: "executions.demonstrate", input: {}, actor: { kind: "cockpit" }, repository: "/work/checkout", run_id: null, session_key: null, request_id: "r-1", trace_id: "0".repeat(32), cancellable: true, effect: "read" });
        store.append(ID, [{ type: "execution.started", data: {} }]);
        const page = loadPage(executionHtml(store.get(ID)!, options), { path: `/cockpit/executions/${ID}`, scripts: [...SCRIPTS] });
        const view = (page.window as unknown as { docket: { executionView: { apply(e: unknown): void; flush(): void } } }).docket.executionView;
        page.sockets[0]!.open();
        // Each frame's events are drawn together, as a flood is.
        for (const frame of frames) {
          for (const stored of store.append(ID, frame as never)) view.apply(stored);
          view.flush();
        }
        const reloaded = loadPage(executionHtml(store.get(ID)!, options), { path: `/cockpit/executions/${ID}`, scripts: [] });
        try {
          expect(shown(page.document)).toEqual(shown(reloaded.document));
        } finally {
          await Promise.all([page.close(), reloaded.close()]);
        }
      }),
      { numRuns: 30 },
    );
  }, 60_000);

  test("a page watched live shows the streams written to last, at most the server's bound, with their names as text, and says how many it does not show, as a reload would (tester, session 33)", async () => {
    const store = createMemoryStore({ limits: defaultLimits() });
    store.create({ id: ID, capability: "executions.demonstrate", input: {}, actor: { kind: "cockpit" }, repository: "/work/checkout", run_id: null, session_key: null, request_id: "r-1", trace_id: "0".repeat(32), cancellable: true, effect: "read" });
    store.append(ID, [{ type: "execution.started", data: {} }]);
    const page = loadPage(executionHtml(store.get(ID)!), { path: `/cockpit/executions/${ID}`, scripts: [...SCRIPTS] });
    pages.push(page);
    const view = (page.window as unknown as { docket: { executionView: { apply(e: unknown): void; flush(): void } } }).docket.executionView;
    page.sockets[0]!.open();
    // 150 streams, a frame of 30 at a time (one name coloured), then the first written again.
    const name = (i: number) => (i === 149 ? "last\u001b[31mred\u001b[0m" : `s${i}`);
    for (let from = 0; from < 150; from += 30) {
      for (let i = from; i < from + 30; i++) for (const stored of store.append(ID, [{ type: "execution.stream", data: { name: name(i), chunk: `chunk ${i}\n` } }] as never)) view.apply(stored);
      view.flush();
    }
    for (const stored of store.append(ID, [{ type: "execution.stream", data: { name: "s0", chunk: "again\n" } }] as never)) view.apply(stored);
    view.flush();
    const extras = historyExtras(store, ID, store.get(ID)!.last_sequence);
    const reloaded = loadPage(executionHtml(store.get(ID)!, { extras }), { path: `/cockpit/executions/${ID}`, scripts: [] });
    pages.push(reloaded);
    const streamsOf = (doc: Document) => ({
      names: new Set([...doc.querySelectorAll("[data-slot='streams'] [data-stream]")].map((block) => block.getAttribute("data-stream"))),
      headings: [...doc.querySelectorAll("[data-slot='streams'] [data-stream] h3")].map((h) => h.textContent),
      note: doc.querySelector('[data-slot="streams-dropped"]')!.textContent,
    });
    const live = streamsOf(page.document);
    expect(live.names.size).toBe(STREAMS_SHOWN);
    expect(live.names.has("s0")).toBe(true);
    expect(live.names.has("s50")).toBe(false);
    expect(live.headings).toContain("lastred");
    expect(live.note).toBe("50 more stream(s) not shown: only those written to last are. docket executions events has every chunk.");
    // The reload shows the same streams (in the order they began) and says the same.
    const again = streamsOf(reloaded.document);
    expect(again.names).toEqual(live.names);
    expect(again.note).toBe(live.note);
    expect(again.headings).toContain("lastred");
  });

  test("a page watched live through a flood keeps the streams written to last when one batch writes more than its bound, and after a reload's, as a reload would (cockpit tester)", async () => {
    const store = createMemoryStore({ limits: defaultLimits() });
    store.create({ id: ID, capability: "executions.demonstrate", input: {}, actor: { kind: "cockpit" }, repository: "/work/checkout", run_id: null, session_key: null, request_id: "r-1", trace_id: "0".repeat(32), cancellable: true, effect: "read" });
    store.append(ID, [{ type: "execution.started", data: {} }]);
    const write = (view: { apply(e: unknown): void }, name: string) => {
      for (const stored of store.append(ID, [{ type: "execution.stream", data: { name, chunk: `${name}\n` } }] as never)) view.apply(stored);
    };
    const names = (doc: Document) => new Set([...doc.querySelectorAll("[data-slot='streams'] [data-stream]")].map((block) => block.getAttribute("data-stream")));
    // The page as the server draws it now, with the streams it holds (a reload), with or without its scripts.
    const drawn = (scripts: Array<(typeof SCRIPTS)[number]>) => {
      const page = loadPage(executionHtml(store.get(ID)!, { extras: historyExtras(store, ID, store.get(ID)!.last_sequence) }), { path: `/cockpit/executions/${ID}`, scripts });
      pages.push(page);
      return page;
    };
    const reload = () => drawn([]);
    /** The page opened now and watched live: its view takes the events stored from here on. */
    const watched = () => {
      const page = drawn([...SCRIPTS]);
      page.sockets[0]!.open();
      return { page, view: (page.window as unknown as { docket: { executionView: { apply(e: unknown): void; flush(): void } } }).docket.executionView };
    };
    const { page, view } = watched();
    // One batch: st0 … st100, then st0 again. Before, every stream of the batch had one stamp, and the first made (st0) went.
    for (let i = 0; i <= STREAMS_SHOWN; i++) write(view, `st${i}`);
    write(view, "st0");
    view.flush();
    const reloaded = reload();
    expect(names(page.document).has("st0")).toBe(true);
    expect(names(page.document).has("st1")).toBe(false);
    expect(names(page.document)).toEqual(names(reloaded.document));
    // A page opened now starts from the reload's streams, each as lately written as the server says.
    const { page: opened, view: openedView } = watched();
    write(openedView, "fresh");
    openedView.flush();
    const after = reload();
    expect(names(opened.document).has("st2")).toBe(false);
    expect(names(opened.document).has("st0")).toBe(true);
    expect(names(opened.document)).toEqual(names(after.document));
  });

  test("the steps table says how many earlier steps were not kept and how many of those failed, live and reloaded alike", () => {
    const steps = ["c", "d"].map((id) => ({ id, title: id, state: "succeeded" as const, message: null, started_at: stamp(1), finished_at: stamp(2) }));
    const page = loadPage(executionHtml(runningSnapshot({ steps, steps_dropped: 5, steps_dropped_failed: 2 }), { stepLimit: 2 }), { path: `/cockpit/executions/${ID}`, scripts: [...SCRIPTS] });
    pages.push(page);
    const note = () => page.document.querySelector('[data-slot="steps-dropped"]')!.textContent;
    expect(note()).toBe("5 earlier step(s) not kept, 2 of them failed.");
    expect(page.document.querySelector('[data-section="timeline"] p')!.textContent).toContain("5 earlier step(s) not kept, 2 of them failed.");
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive(event(3, "execution.step", { id: "e", title: "E" }));
    socket.receive(event(4, "execution.step_done", { id: "e", ok: false }));
    socket.receive(event(5, "execution.step", { id: "f", title: "F" }));
    expect(note()).toBe("7 earlier step(s) not kept, 2 of them failed.");
    socket.receive(event(6, "execution.step", { id: "g", title: "G" }));
    // e failed and goes now; f still runs and stays.
    expect(note()).toBe("8 earlier step(s) not kept, 3 of them failed.");
    expect([...page.document.querySelectorAll('[data-slot="steps"] tr[data-step-id]')].map((row) => row.getAttribute("data-step-id"))).toEqual(["f", "g"]);
    // A snapshot stored before failed steps were counted says only how many.
    const older = loadPage(executionHtml(runningSnapshot({ steps, steps_dropped: 5 }), { stepLimit: 2 }), { path: `/cockpit/executions/${ID}`, scripts: [] });
    pages.push(older);
    expect(older.document.querySelector('[data-slot="steps-dropped"]')!.textContent).toBe("5 earlier step(s) not kept.");
  });
});

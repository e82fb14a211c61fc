import { describe, expect, test } from "bun:test";
import { loadPage, ORIGIN, type FakeFetch } from "./_support/dom.ts";
import { executionHtml, ID, liveExecutionPage, runningSnapshot } from "./_support/fixtures.ts";

// An execution page never shows what it knew last as current once the server said otherwise
// (a tester): a server that no longer knows the execution (restarted with the memory store), a
// Cancel answered "already succeeded" while the page, behind a flood of events, still shows it running.

/** A fetch answering `answer(url)` with its status and JSON body. */
function fetchAnswering(answer: (url: URL) => { status: number; body: unknown; headers?: Record<string, string> }): FakeFetch {
  const urls: string[] = [];
  const fn = (async (url: string) => {
    urls.push(url);
    const { status, body, headers } = answer(new URL(url, ORIGIN));
    return { ok: status < 400, status, headers: new Headers(headers ?? {}), json: async () => body, text: async () => JSON.stringify(body) };
  }) as unknown as FakeFetch;
  fn.urls = urls;
  return fn;
}

const scripts = ["socket.js", "format.js", "log-filter.js", "refresh.js", "execution.js"] as const;
const indicatorWord = (doc: Document) => doc.querySelector("[data-connection-word]")!.textContent;

describe("an execution page the server contradicts", () => {
  test("a socket refused before a word, and the events URL answering 404: the page stops following, says why, and offers no Cancel", async () => {
    const fetch = fetchAnswering((url) => (url.pathname === "/api/v1/executions/events" ? { status: 404, body: { error: { error_code: "not_found" } } } : { status: 200, body: {} }));
    const page = loadPage(executionHtml(runningSnapshot()), { path: `/cockpit/executions/${ID}`, scripts: [...scripts], fetch });
    try {
      expect(page.document.querySelector('[data-slot="cancel"]')).not.toBeNull();
      page.sockets[0]!.lose();
      await page.settle();
      expect(fetch.urls.some((u) => u.includes("/api/v1/executions/events") && u.includes(`id=${ID}`))).toBe(true);
      expect(indicatorWord(page.document)).toBe("Not following — this server no longer knows this execution");
      expect(page.document.querySelector('[data-slot="state"]')!.textContent).toBe("? Unknown");
      expect(page.document.querySelector('[data-slot="cancel"]')).toBeNull();
      expect(page.document.querySelector('[data-slot="notice"]')!.textContent).toContain("This server no longer knows this execution");
      // No retry comes: the page follows nothing more.
      const opened = page.sockets.length;
      page.clock.advance(60_000);
      expect(page.sockets.length).toBe(opened);
    } finally {
      await page.close();
    }
  });

  test("the timeline of a running step is read while the channel is heard, not while the server is down, and never again once the server no longer knows the execution", async () => {
    let known = true;
    const fetch = fetchAnswering((url) => (url.pathname === "/api/v1/executions/events" && !known ? { status: 404, body: { error: { error_code: "not_found" } } } : { status: 200, body: { events: [], last_sequence: 2 } }));
    const running = runningSnapshot({ steps: [{ id: "a", title: "A", state: "running", message: null, started_at: "2026-09-08T01:02:04.000Z", finished_at: null }] });
    const page = loadPage(executionHtml(running), { path: `/cockpit/executions/${ID}`, scripts: [...scripts], fetch });
    const timelineReads = () => fetch.urls.filter((u) => u.includes("section=timeline")).length;
    try {
      page.sockets[0]!.open();
      page.sockets[0]!.receive({ type: "stream.ready", schema_version: "1", subscribed: [ID], replayed: 0, truncated: false, heartbeat_ms: 20_000 });
      for (let i = 0; i < 30; i++) (page.clock.advance(100), await page.settle());
      expect(timelineReads()).toBeGreaterThan(0);
      // The server down: the socket lost, the events URL still answered (it knows it, say, through a proxy).
      page.sockets[0]!.lose();
      await page.settle();
      const whileDown = timelineReads();
      for (let i = 0; i < 50; i++) (page.clock.advance(100), await page.settle());
      expect(timelineReads()).toBe(whileDown);
      // Restarted without it: the next refused socket finds it gone, and the timeline is read no more.
      known = false;
      for (const socket of page.sockets.slice(1)) socket.lose();
      for (let i = 0; i < 200 && page.document.querySelector('[data-slot="state"]')!.textContent !== "? Unknown"; i++) {
        page.clock.advance(500);
        await page.settle();
        for (const socket of page.sockets.slice(1)) if (socket.readyState === 0) socket.lose();
      }
      expect(page.document.querySelector('[data-slot="state"]')!.textContent).toBe("? Unknown");
      const atGone = timelineReads();
      for (let i = 0; i < 50; i++) (page.clock.advance(200), await page.settle());
      expect(timelineReads()).toBe(atGone);
    } finally {
      await page.close();
    }
  });

  test("a socket refused while the server still knows the execution (it is down, say): the page retries as before", async () => {
    const fetch = fetchAnswering(() => ({ status: 200, body: { events: [], last_sequence: 2 } }));
    const page = loadPage(executionHtml(runningSnapshot()), { path: `/cockpit/executions/${ID}`, scripts: [...scripts], fetch });
    try {
      page.sockets[0]!.lose();
      await page.settle();
      page.clock.advance(1000);
      expect(page.sockets.length).toBe(2);
      expect(page.document.querySelector('[data-slot="cancel"]')).not.toBeNull();
    } finally {
      await page.close();
    }
  });

  test("Cancel answered 'already succeeded' while the page shows it running: the page goes to the server's page, and the button does not claim a cancel was requested", async () => {
    const fetch = fetchAnswering((url) =>
      url.pathname.endsWith("/cancel") ? { status: 200, body: { id: ID, state: "succeeded", cancellable: true, requested: false, recorded: true, message: `${ID} has already ended (succeeded); nothing to cancel.` }, headers: { "X-Docket-Notice": "0123456789abcdef" } } : { status: 200, body: {} },
    );
    const page = loadPage(executionHtml(runningSnapshot()), { path: `/cockpit/executions/${ID}`, scripts: [...scripts], fetch });
    try {
      const form = page.document.querySelector('[data-slot="cancel"]') as HTMLFormElement;
      form.dispatchEvent(new page.window.Event("submit", { cancelable: true }) as unknown as Event);
      await page.settle();
      expect(page.document.querySelector('[data-slot="notice"]')!.textContent).toContain("has already ended (succeeded); nothing to cancel.");
      const button = form.querySelector("button")!;
      expect(button.textContent).not.toBe("Cancel requested");
      expect(button.hasAttribute("disabled")).toBe(false);
      // With the notice a Cancel without a script lands on: the new page says why its button is gone.
      expect(page.navigations).toEqual([`/cockpit/executions/${ID}?notice=0123456789abcdef`]);
    } finally {
      await page.close();
    }
  });
});

describe("an execution page behind a flood, after a Cancel", () => {
  test("a Cancel requested: the page asks the server once a second, and shows the server's page once it ended there, though its own events lag", async () => {
    let state = "cancelling";
    const fetch = fetchAnswering((url) =>
      url.pathname.endsWith("/cancel")
        ? { status: 200, body: { id: ID, state: "cancelling", cancellable: true, requested: true, recorded: true, message: "cancel requested" } }
        : url.pathname === "/api/v1/executions/get"
          ? { status: 200, body: { ...runningSnapshot(), state } }
          : { status: 200, body: {} },
    );
    const page = loadPage(executionHtml(runningSnapshot()), { path: `/cockpit/executions/${ID}`, scripts: [...scripts], fetch });
    const asked = () => fetch.urls.filter((u) => u.startsWith("/api/v1/executions/get")).length;
    try {
      const form = page.document.querySelector('[data-slot="cancel"]') as HTMLFormElement;
      form.dispatchEvent(new page.window.Event("submit", { cancelable: true }) as unknown as Event);
      await page.settle();
      for (let i = 0; i < 3; i++) (page.clock.advance(1000), await page.settle());
      expect(asked()).toBe(3);
      expect(page.navigations).toEqual([]);
      state = "cancelled";
      page.clock.advance(1000);
      await page.settle();
      expect(page.navigations).toEqual([`/cockpit/executions/${ID}`]);
      // Nothing more is asked once it is shown.
      const after = asked();
      for (let i = 0; i < 5; i++) (page.clock.advance(1000), await page.settle());
      expect(asked()).toBe(after);
    } finally {
      await page.close();
    }
  });
});

describe("an execution page behind a flood, ended on the server", () => {
  test("five seconds behind, the page asks the server once a second, and shows the server's page once it ended there (a tester's page showed Running 26 s after)", async () => {
    let state = "running";
    const fetch = fetchAnswering((url) => (url.pathname === "/api/v1/executions/get" ? { status: 200, body: { ...runningSnapshot(), state } } : { status: 200, body: {} }));
    const asked = () => fetch.urls.filter((u) => u.startsWith("/api/v1/executions/get")).length;
    const { page, send } = liveExecutionPage({ fetch });
    try {
      send("execution.log", { level: "info", message: "line 1" }, 0);
      send("execution.log", { level: "info", message: "line 2" }, 3_000);
      for (let i = 0; i < 3; i++) (page.clock.advance(500), await page.settle());
      // Three seconds behind: its events will tell it soon enough.
      expect(asked()).toBe(0);
      send("execution.log", { level: "info", message: "line 3" }, 6_000);
      for (let i = 0; i < 2; i++) (page.clock.advance(1000), await page.settle());
      expect(asked()).toBeGreaterThan(0);
      expect(page.navigations).toEqual([]);
      state = "succeeded";
      page.clock.advance(1000);
      await page.settle();
      expect(page.navigations).toEqual([`/cockpit/executions/${ID}`]);
    } finally {
      await page.close();
    }
  });
});

describe("an execution page behind a flood", () => {
  test("events arriving later and later than the first did: the indicator says how far behind the server the page reads, and no more once it caught up", async () => {
    const { page, send } = liveExecutionPage();
    try {
      send("execution.log", { level: "info", message: "line 1" }, 0);
      expect(indicatorWord(page.document)).toBe("Live");
      send("execution.log", { level: "info", message: "line 2" }, 4_000);
      expect(indicatorWord(page.document)).toBe("Live — 4 s behind the server");
      send("execution.log", { level: "info", message: "line 3" }, 100);
      expect(indicatorWord(page.document)).toBe("Live");
    } finally {
      await page.close();
    }
  });

  test("after a draw of 200 events or more, the next waits a quarter of a second, never drawn early by the first draw's leftover timer", async () => {
    const page = loadPage(executionHtml(runningSnapshot()), { path: `/cockpit/executions/${ID}`, scripts: [...scripts] });
    try {
      const view = (page.window as unknown as { docket: { executionView: { apply(e: unknown): void } } }).docket.executionView;
      const after = runningSnapshot().last_sequence;
      const drawn = () => Number(page.document.querySelector('[data-slot="last-sequence"]')!.textContent);
      const log = (n: number) => ({ sequence: after + n, execution_id: ID, type: "execution.log", timestamp: new Date().toISOString(), data: { level: "info", message: `line ${n}` } });
      for (let n = 1; n <= 300; n++) view.apply(log(n));
      page.clock.advance(16);
      expect(drawn()).toBe(after + 300);
      // A flood: the next event waits FLOOD_MS from its scheduling, whatever else was armed before.
      view.apply(log(301));
      page.clock.advance(200);
      expect(drawn()).toBe(after + 300);
      page.clock.advance(50);
      expect(drawn()).toBe(after + 301);
      // One event drawn: the pace is a frame's again.
      view.apply(log(302));
      page.clock.advance(16);
      expect(drawn()).toBe(after + 302);
    } finally {
      await page.close();
    }
  });

  test("a page that read its whole backlog says so once no event came for a second, though the last one it read was old (a flood that ended, a reconnect's replay)", async () => {
    const { page, send } = liveExecutionPage();
    try {
      send("execution.log", { level: "info", message: "line 1" }, 0);
      send("execution.log", { level: "info", message: "line 2" }, 6_000);
      expect(indicatorWord(page.document)).toBe("Live — 6 s behind the server");
      // The backlog still arriving: behind it stays.
      page.clock.advance(900);
      send("execution.log", { level: "info", message: "line 3" }, 5_000);
      page.clock.advance(900);
      expect(indicatorWord(page.document)).toBe("Live — 5 s behind the server");
      // Nothing more came: everything there was has been read.
      page.clock.advance(200);
      expect(indicatorWord(page.document)).toBe("Live");
    } finally {
      await page.close();
    }
  });
});

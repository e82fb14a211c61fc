import { afterEach, describe, expect, test } from "bun:test";
import { fakeFetch, loadPage, ORIGIN, type LoadedPage } from "./_support/dom.ts";
import { capabilityHtml, capabilityOf, countsOf, event, executionsHtml, ID, overviewHtml, runningSnapshot, stamp } from "./_support/fixtures.ts";
import type { Bucket } from "../../cockpit/chart-data.ts";

const pages: LoadedPage[] = [];

afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
});

const OTHER = "x-20260908T010204Z-deadbeef";

/** A served page the test hands out when it decides: `next` is the one the scripts' next fetch gets. */
function servedPages() {
  let release: ((html: string) => void) | null = null;
  const fetch = fakeFetch(() => new Promise<string>((resolve) => (release = resolve)));
  return {
    fetch,
    /** Answers the fetch on its way with this page. */
    answer(html: string) {
      const answer = release;
      release = null;
      if (!answer) throw new Error("no page was asked for");
      answer(html);
    },
    pending: () => release !== null,
  };
}

const LIST_SCRIPTS = ["socket.js", "format.js", "refresh.js", "live-list.js"] as const;
const text = (element: Element | null) => (element?.textContent ?? "").replace(/\s+/g, " ").trim();

describe("live-list.js", () => {
  test("live-list.js keeps the overview's rows current over the every-execution channel, and its counts as the server re-reads them", async () => {
    const served = servedPages();
    const page = loadPage(overviewHtml([runningSnapshot()]), { path: "/cockpit", scripts: [...LIST_SCRIPTS], fetch: served.fetch });
    pages.push(page);
    const doc = page.document;
    const count = (state: string) => doc.querySelector(`[data-count="${state}"]`)!.textContent;
    const rowsOf = (table: string) => [...doc.querySelectorAll(`[data-execution-table="${table}"] tr[data-execution-row]`)].map((r) => r.getAttribute("data-execution-row"));
    // Every execution, live only: no cursor.
    expect(page.sockets[0]!.url).toBe(`${ORIGIN.replace("http", "ws")}/events`);
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    served.answer(overviewHtml([runningSnapshot()]));
    await page.settle();

    socket.receive(event(1, "execution.created", { capability: "team.<b>echo</b>", input: {}, actor: { kind: "cli", pid: 42 }, run_id: null, session_key: null }, OTHER));
    expect(rowsOf("active")).toEqual([OTHER, ID]);
    expect(rowsOf("recent")).toEqual([OTHER, ID]);
    const row = () => doc.querySelector(`[data-execution-table="recent"] tr[data-execution-row="${OTHER}"]`)!;
    expect(row().querySelector('[data-cell="link"]')!.getAttribute("href")).toBe(`/cockpit/executions/${OTHER}`);
    expect(row().querySelector('[data-cell="capability"]')!.textContent).toBe("team.<b>echo</b>");
    expect(row().querySelector("b")).toBeNull();
    expect(row().querySelector('[data-cell="actor"]')!.textContent).toBe("docket run (pid 42)");
    expect(text(row().querySelector('[data-cell="state"]'))).toBe("○ Queued");
    // A state changed: the counts are the server's, read again — a second after the last answer,
    // not before, however many changes come meanwhile.
    expect(served.pending()).toBe(false);
    page.clock.advance(999);
    await page.settle();
    expect(served.pending()).toBe(false);
    page.clock.advance(1);
    await page.settle();
    expect(served.fetch.urls.at(-1)).toBe("/cockpit?section=counts");
    served.answer(overviewHtml([runningSnapshot()], countsOf({ queued: 1, running: 1, succeeded: 4 })));
    await page.settle();
    expect([count("queued"), count("running")]).toEqual(["1", "1"]);

    socket.receive(event(2, "execution.started", {}, OTHER));
    socket.receive(event(2, "execution.started", {}, OTHER));
    socket.receive(event(3, "execution.progress", { current: 1, total: 4 }, OTHER));
    expect(row().querySelector('[data-cell="progress"]')!.textContent).toBe("1 of 4 (25%)");
    socket.receive(event(4, "execution.completed", { state: "failed", duration_ms: 2500 }, OTHER));
    expect(rowsOf("active")).toEqual([ID]);
    expect(row().getAttribute("data-state")).toBe("failed");
    expect(row().querySelector('[data-cell="state"]')!.textContent).toContain("Failed");
    expect(row().querySelector('[data-cell="duration"]')!.textContent).toBe("2.50 s");

    socket.receive(event(3, "execution.cancel_requested", { actor: { kind: "http" } }));
    socket.receive(event(4, "execution.completed", { state: "cancelled", duration_ms: 1 }));
    expect(rowsOf("active")).toEqual([]);
    expect(doc.querySelector('[data-execution-table="active"] [data-empty]')!.hasAttribute("hidden")).toBe(false);
  });

  test("live-list.js re-reads the overview once the channel is ready: an execution that ended while the page loaded does not stay running, in its tables, counts or chart", async () => {
    const served = servedPages();
    const bucket = (counts: Partial<Bucket["counts"]>): Bucket[] => [{ from: 0, to: 1, counts: { succeeded: 0, failed: 0, cancelled: 0, active: 0, ...counts } }];
    const page = loadPage(overviewHtml([runningSnapshot()], countsOf({ running: 1 }), bucket({ active: 1 })), { path: "/cockpit", scripts: [...LIST_SCRIPTS], fetch: served.fetch });
    pages.push(page);
    const doc = page.document;
    page.sockets[0]!.open();
    // It ended between the drawing and the subscription: the channel, live only, never says so.
    page.sockets[0]!.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    expect(served.pending()).toBe(true);
    expect(doc.querySelectorAll('[data-chart="activity"] rect.bar-active')).toHaveLength(1);
    served.answer(overviewHtml([runningSnapshot({ state: "succeeded", finished_at: stamp(3), duration_ms: 1, last_sequence: 3 })], countsOf({ succeeded: 1 }), bucket({ succeeded: 1 })));
    await page.settle();
    // The chart is the server's drawing too: read again with the rest (a restarted server ended it, say).
    expect(doc.querySelectorAll('[data-chart="activity"] rect.bar-active')).toHaveLength(0);
    expect(doc.querySelectorAll('[data-chart="activity"] rect.bar-succeeded')).toHaveLength(1);
    expect(doc.querySelector(`[data-execution-table="recent"] tr[data-execution-row="${ID}"]`)!.getAttribute("data-state")).toBe("succeeded");
    expect(doc.querySelectorAll('[data-execution-table="active"] tr[data-execution-row]')).toHaveLength(0);
    expect([doc.querySelector('[data-count="running"]')!.textContent, doc.querySelector('[data-count="succeeded"]')!.textContent]).toEqual(["0", "1"]);
  });

  test("live-list.js applies again what arrived while a re-read was on its way, and never an event the re-read already shows", async () => {
    const served = servedPages();
    const page = loadPage(overviewHtml([runningSnapshot()], countsOf({ running: 1 })), { path: "/cockpit", scripts: [...LIST_SCRIPTS], fetch: served.fetch });
    pages.push(page);
    const doc = page.document;
    const state = (table: string, id = ID) => doc.querySelector(`[data-execution-table="${table}"] tr[data-execution-row="${id}"]`)?.getAttribute("data-state");
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    // While the re-read is on its way, another execution appears and this one ends.
    socket.receive(event(1, "execution.created", { capability: "team.echo", input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, OTHER));
    socket.receive(event(3, "execution.progress", { current: 3, total: 3 }));
    socket.receive(event(4, "execution.completed", { state: "succeeded", duration_ms: 1500 }));
    expect(state("recent")).toBe("succeeded");
    // The server drew the page before both.
    served.answer(overviewHtml([runningSnapshot()], countsOf({ running: 1 })));
    await page.settle();
    expect(state("recent")).toBe("succeeded");
    expect(state("active")).toBeUndefined();
    expect(state("recent", OTHER)).toBe("queued");
    expect(text(doc.querySelector(`[data-execution-table="recent"] tr[data-execution-row="${ID}"] [data-cell="duration"]`))).toBe("1.50 s");
    expect(text(doc.querySelector(`[data-execution-table="recent"] tr[data-execution-row="${ID}"] [data-cell="progress"]`))).toBe("3 of 3 (100%)");
    // The counts changed meanwhile: read again once the first answer is in.
    page.clock.advance(1000);
    await page.settle();
    expect(served.pending()).toBe(true);
    // Drawn after both: nothing is applied twice, no row is added twice.
    const ended = runningSnapshot({ state: "succeeded", finished_at: stamp(4), duration_ms: 1500, last_sequence: 4 });
    served.answer(overviewHtml([ended], countsOf({ queued: 1, succeeded: 1 })));
    await page.settle();
    expect(doc.querySelectorAll(`tr[data-execution-row="${OTHER}"]`)).toHaveLength(2);
    expect(doc.querySelector('[data-count="succeeded"]')!.textContent).toBe("1");
    // An event older than what a row was drawn at changes nothing.
    socket.receive(event(2, "execution.started", {}));
    expect(state("recent")).toBe("succeeded");
  });

  test("live-list.js takes the executions list's counts from the server: a queued execution cancelled elsewhere leaves Queued", async () => {
    const served = servedPages();
    const shown = runningSnapshot({ capability: "team.echo", state: "succeeded", finished_at: stamp(3), duration_ms: 5, last_sequence: 4 });
    const filter = { capability: "team.echo", state: "succeeded" as const };
    const page = loadPage(executionsHtml([shown], countsOf({ queued: 1, succeeded: 1 }), filter), { path: "/cockpit/executions?capability=team.echo&state=succeeded", scripts: [...LIST_SCRIPTS], fetch: served.fetch });
    pages.push(page);
    const doc = page.document;
    const count = (state: string) => doc.querySelector(`[data-count="${state}"]`)!.textContent;
    const notice = doc.querySelector('[data-slot="resync"]')!;
    page.sockets[0]!.open();
    page.sockets[0]!.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    expect(served.fetch.urls).toEqual(["/cockpit/executions?state=succeeded&capability=team.echo&section=counts&section=list"]);
    served.answer(executionsHtml([shown], countsOf({ queued: 1, succeeded: 1 }), filter));
    await page.settle();
    // Another capability's queued execution, never shown here, is cancelled: sequence 2, from queued.
    page.sockets[0]!.receive(event(2, "execution.completed", { state: "cancelled", duration_ms: 0 }, OTHER));
    page.clock.advance(1000);
    await page.settle();
    served.answer(executionsHtml([shown], countsOf({ succeeded: 1, cancelled: 1 }), filter));
    await page.settle();
    expect([count("queued"), count("running"), count("cancelled")]).toEqual(["0", "0", "1"]);
    // A new execution this filter does not show offers no reload; one it would show (a queued team.echo with no state filter) does.
    page.sockets[0]!.receive(event(1, "execution.created", { capability: "team.sleep", input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, "x-20260908T010205Z-0000000a"));
    expect(notice.hasAttribute("hidden")).toBe(true);
    const all = loadPage(executionsHtml([shown], countsOf({ succeeded: 1 }), { capability: "team.echo" }), { path: "/cockpit/executions?capability=team.echo", scripts: [...LIST_SCRIPTS], fetch: fakeFetch(() => executionsHtml([shown], countsOf({ succeeded: 1 }), { capability: "team.echo" })) });
    pages.push(all);
    all.sockets[0]!.open();
    all.sockets[0]!.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    all.sockets[0]!.receive(event(1, "execution.created", { capability: "team.echo", input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, "x-20260908T010205Z-0000000b"));
    expect(all.document.querySelector('[data-slot="resync"]')!.hasAttribute("hidden")).toBe(false);
  });

  test("live-list.js re-reads at most once a second under a burst of executions, and the last change is read", async () => {
    const fetch = fakeFetch(() => overviewHtml([]));
    const page = loadPage(overviewHtml([]), { path: "/cockpit", scripts: [...LIST_SCRIPTS], fetch });
    pages.push(page);
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", subscribed: "all", heartbeat_ms: 20_000 });
    await page.settle();
    expect(fetch.urls).toHaveLength(1);
    // 60 executions created, started and ended over 3 s: 180 changes of state, every 50 ms.
    const sends: Array<{ at: number; url: string }> = [];
    const step = async () => {
      const before = fetch.urls.length;
      page.clock.advance(50);
      await page.settle();
      for (const url of fetch.urls.slice(before)) sends.push({ at: page.clock.now().getTime(), url });
    };
    let lastChange = 0;
    for (let i = 0; i < 60; i++) {
      const id = `x-20260908T010205Z-${i.toString(16).padStart(8, "0")}`;
      socket.receive(event(1, "execution.created", { capability: "team.echo", input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, id));
      socket.receive(event(2, "execution.started", {}, id));
      socket.receive(event(3, "execution.completed", { state: "succeeded", duration_ms: 1 }, id));
      lastChange = page.clock.now().getTime();
      await step();
    }
    // Then quiet for 3 s: what changed after the last re-read is read once its second is over.
    for (let i = 0; i < 60; i++) await step();
    // One re-read a second at most (the first right away, then one each time the second ends)…
    for (let i = 1; i < sends.length; i++) expect(sends[i]!.at - sends[i - 1]!.at).toBeGreaterThanOrEqual(1000);
    expect(sends.length).toBeLessThanOrEqual(6);
    // …and the counts are read after the last change, once.
    expect(sends.filter((s) => s.at > lastChange && s.url.includes("section=counts"))).toHaveLength(1);
    const sent = fetch.urls.length;
    page.clock.advance(5000);
    await page.settle();
    expect(fetch.urls).toHaveLength(sent);
  });

  test("live-list.js counts on a state-filtered list each execution that reached its state, asking the server where the page cannot know, and drops one that left it", async () => {
    const filter = { state: "running" as const, capability: "team.echo" };
    // The list is what the page asks when it cannot know: of the two executions created before
    // the page that start, only ID is team.echo (the re-reads at ready came before either).
    let startedSince = false;
    const fetch = fakeFetch((url) =>
      startedSince && url.searchParams.getAll("section").includes("list")
        ? executionsHtml([runningSnapshot({ capability: "team.echo" })], countsOf({ running: 1 }), filter)
        : executionsHtml([], countsOf({}), filter),
    );
    const page = loadPage(executionsHtml([], countsOf({}), filter), { path: "/cockpit/executions?state=running&capability=team.echo", scripts: [...LIST_SCRIPTS], fetch });
    pages.push(page);
    const doc = page.document;
    const notice = doc.querySelector('[data-slot="resync"]')!;
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    await page.settle();
    startedSince = true;
    const created = (id: string, capability: string) => event(1, "execution.created", { capability, input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, id);
    const listAsked = () => fetch.urls.slice(1).filter((url) => url.includes("section=list"));
    // Created since the page loaded: its capability is known, so the page decides alone.
    const mine = "x-20260908T010205Z-0000000a";
    const theirs = "x-20260908T010205Z-0000000b";
    socket.receive(created(mine, "team.echo"));
    socket.receive(created(theirs, "team.sleep"));
    socket.receive(event(2, "execution.started", {}, theirs));
    await page.settle();
    expect(notice.hasAttribute("hidden")).toBe(true);
    socket.receive(event(2, "execution.started", {}, mine));
    expect(notice.hasAttribute("hidden")).toBe(false);
    expect(text(notice)).toContain("1 new execution matches this list");
    expect(listAsked()).toEqual([]);
    // It ended: a reload would not show it.
    socket.receive(event(3, "execution.completed", { state: "succeeded", duration_ms: 1 }, mine));
    expect(notice.hasAttribute("hidden")).toBe(true);
    // Created before the page was drawn: the server says, by what a reload shows, which of them this list takes.
    socket.receive(event(2, "execution.started", {}, ID));
    socket.receive(event(2, "execution.started", {}, OTHER));
    await page.settle();
    page.clock.advance(1000);
    await page.settle();
    // Both asked together, with the counts, once the second since the last answer is over; the list read, not drawn.
    expect(listAsked()).toEqual(["/cockpit/executions?state=running&capability=team.echo&section=counts&section=list"]);
    expect(doc.querySelectorAll('[data-execution-table="list"] tr[data-execution-row]')).toHaveLength(0);
    expect(text(notice)).toContain("1 new execution matches this list");
    expect(notice.hasAttribute("hidden")).toBe(false);
  });

  test("live-list.js asks where executions that reached a filtered list's state sit through the same re-reads as its counts: one request in flight, one a second", async () => {
    // 40 executions created before the page was drawn (their capability unknown to it) start one
    // every 100 ms and fail 250 ms later; the server answers each request 40 ms after it came.
    const failing = Array.from({ length: 40 }, (_, i) => ({ id: `x-20260908T010205Z-${i.toString(16).padStart(8, "0")}`, started: 100 * i, failed: 100 * i + 250 }));
    let page: LoadedPage;
    let inFlight = 0;
    let mostInFlight = 0;
    const sends: Array<{ at: number; url: string }> = [];
    const drawnAt = (at: number) => {
      const failed = failing.filter((x) => x.failed <= at).reverse();
      const rows = failed.map((x) => runningSnapshot({ id: x.id, capability: "team.echo", state: "failed", finished_at: stamp(3), duration_ms: 250, last_sequence: 3 }));
      return executionsHtml(rows, countsOf({ running: failing.filter((x) => x.started <= at && x.failed > at).length, failed: failed.length }), { state: "failed" });
    };
    const fetch = fakeFetch((url) => {
      const at = page.clock.monotonic();
      sends.push({ at, url: url.pathname + url.search });
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      return new Promise<string>((resolve) =>
        page.clock.setTimeout(() => {
          inFlight--;
          resolve(drawnAt(at + 40));
        }, 40),
      );
    });
    page = loadPage(executionsHtml([], countsOf({ queued: 40 }), { state: "failed" }), { path: "/cockpit/executions?state=failed", scripts: [...LIST_SCRIPTS], fetch });
    pages.push(page);
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    await page.settle();
    // Events come as they happen, the clock moved 10 ms at a time, for 4.25 s and then 3 s of quiet.
    for (let now = 0; now <= 7250; now += 10) {
      for (const x of failing) {
        if (x.started === now) socket.receive(event(2, "execution.started", {}, x.id));
        if (x.failed === now) socket.receive(event(3, "execution.completed", { state: "failed", duration_ms: 250 }, x.id));
      }
      page.clock.advance(10);
      await page.settle();
    }
    expect(sends.some((s) => s.url.includes("section=list") && s.at > 0)).toBe(true);
    // One request in flight at a time, and the next a second after the last answer at the earliest.
    expect(mostInFlight).toBe(1);
    for (let i = 1; i < sends.length; i++) expect(sends[i]!.at - sends[i - 1]!.at).toBeGreaterThanOrEqual(1000);
    // Every failed one is counted, each once.
    expect(text(page.document.querySelector('[data-slot="new-count"]'))).toBe("40 new executions match this list");
  });

  test("live-list.js counts no more new executions than a reload shows: one page", async () => {
    const fetch = fakeFetch(() => executionsHtml([], countsOf({}), {}, 3));
    const page = loadPage(executionsHtml([], countsOf({}), {}, 3), { path: "/cockpit/executions", scripts: [...LIST_SCRIPTS], fetch });
    pages.push(page);
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    await page.settle();
    const create = (i: number) => socket.receive(event(1, "execution.created", { capability: "team.echo", input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, `x-20260908T010205Z-${i.toString(16).padStart(8, "0")}`));
    const notice = () => text(page.document.querySelector('[data-slot="new-count"]'));
    for (let i = 0; i < 3; i++) create(i);
    expect(notice()).toBe("3 new executions match this list");
    // A fourth: the reload still shows three rows, all new.
    create(3);
    expect(notice()).toBe("3 new executions match this list");
  });

  test("live-list.js counts only the new executions the server still lists: those forgotten since (executions_retained) are not what a reload shows; none listed is dropped while the answer is on its way (cockpit testers, session 43)", async () => {
    const idOf = (i: number) => `x-20260908T010205Z-${i.toString(16).padStart(8, "0")}`;
    // What the server lists: nothing when the page loaded.
    let listed: number[] = [];
    const fetch = fakeFetch(() => executionsHtml(listed.map((i) => runningSnapshot({ id: idOf(i), state: "succeeded" })), countsOf({ succeeded: listed.length }), {}, 50));
    const page = loadPage(executionsHtml([], countsOf({}), {}, 50), { path: "/cockpit/executions", scripts: [...LIST_SCRIPTS], fetch });
    pages.push(page);
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    await page.settle();
    const notice = () => text(page.document.querySelector('[data-slot="new-count"]'));
    // Five new ones; by the time the server is asked, it forgot the two oldest (executions_retained 3).
    listed = [2, 3, 4];
    for (let i = 0; i < 5; i++) socket.receive(event(1, "execution.created", { capability: "team.echo", input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, idOf(i)));
    expect(notice()).toBe("5 new executions match this list");
    for (let i = 0; i < 3; i++) {
      page.clock.advance(1000);
      await page.settle();
    }
    expect(notice()).toBe("3 new executions match this list");
    // Two more, and the server keeps them all (active ones are never forgotten): five.
    listed = [2, 3, 4, 5, 6];
    for (const i of [5, 6]) socket.receive(event(1, "execution.created", { capability: "team.echo", input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, idOf(i)));
    for (let i = 0; i < 3; i++) {
      page.clock.advance(1000);
      await page.settle();
    }
    expect(notice()).toBe("5 new executions match this list");
  });

  test("live-list.js offers no reload on a later page (a cursor) for a new execution: it is on the first", async () => {
    const fetch = fakeFetch(() => executionsHtml([], countsOf({}), { cursor: "b206MQ" }));
    const page = loadPage(executionsHtml([], countsOf({}), { cursor: "b206MQ" }), { path: "/cockpit/executions?cursor=b206MQ", scripts: [...LIST_SCRIPTS], fetch });
    pages.push(page);
    page.sockets[0]!.open();
    page.sockets[0]!.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });
    await page.settle();
    page.sockets[0]!.receive(event(1, "execution.created", { capability: "team.echo", input: {}, actor: { kind: "http" }, run_id: null, session_key: null }, OTHER));
    await page.settle();
    expect(page.document.querySelector('[data-slot="resync"]')!.hasAttribute("hidden")).toBe(true);
  });

  test("live-list.js re-reads the page each time the every-execution channel comes back, and after it lagged", async () => {
    const fetch = fakeFetch(() => overviewHtml([]));
    const page = loadPage(overviewHtml([]), { path: "/cockpit", scripts: [...LIST_SCRIPTS], fetch, random: () => 0 });
    pages.push(page);
    page.sockets[0]!.open();
    page.sockets[0]!.receive({ type: "stream.ready", subscribed: "all", heartbeat_ms: 20_000 });
    await page.settle();
    const everything = "/cockpit?section=counts&section=active&section=recent&section=activity";
    expect(fetch.urls).toEqual([everything]);
    page.sockets[0]!.lose();
    page.clock.advance(250);
    page.sockets[1]!.open();
    page.sockets[1]!.receive({ type: "stream.ready", subscribed: "all", heartbeat_ms: 20_000 });
    await page.settle();
    expect(page.sockets[1]!.url).toBe(`${ORIGIN.replace("http", "ws")}/events`);
    // Ready again a quarter of a second after the last answer: read once that second is over.
    expect(fetch.urls).toEqual([everything]);
    page.clock.advance(750);
    await page.settle();
    expect(fetch.urls).toEqual([everything, everything]);
    page.sockets[1]!.receive({ type: "stream.lagged", dropped: 3, last_sequence: {} });
    page.clock.advance(1000);
    await page.settle();
    expect(fetch.urls).toHaveLength(3);
  });
});

describe("run-form.js", () => {
  /** Submits the form with one of its buttons; true when the submission went ahead. */
  function submit(page: LoadedPage, value: "call" | "start"): boolean {
    const form = page.document.querySelector("form[data-docket-run]")!;
    const button = form.querySelector(`button[value="${value}"]`);
    const SubmitEvent = (page.window as any).SubmitEvent;
    return form.dispatchEvent(new SubmitEvent("submit", { cancelable: true, submitter: button }));
  }

  test("run-form.js asks for confirmation before a write capability runs, and marks the form confirmed", () => {
    const yes = loadPage(capabilityHtml(capabilityOf("write")), { path: "/cockpit/capabilities/team.deploy", scripts: ["run-form.js"], confirm: true });
    pages.push(yes);
    expect(submit(yes, "start")).toBe(true);
    expect(yes.confirms).toHaveLength(1);
    expect(yes.confirms[0]).toContain("team.deploy may change something (effect: write). Run it?");
    expect(yes.confirms[0]).toContain("Run as execution");
    expect((yes.document.querySelector("[data-confirmed]") as HTMLInputElement).value).toBe("1");

    const no = loadPage(capabilityHtml(capabilityOf("write")), { path: "/cockpit/capabilities/team.deploy", scripts: ["run-form.js"], confirm: false });
    pages.push(no);
    expect(submit(no, "call")).toBe(false);
    expect(no.confirms).toHaveLength(1);
    expect((no.document.querySelector("[data-confirmed]") as HTMLInputElement).value).toBe("");
  });

  test("run-form.js asks nothing before a read capability runs", () => {
    const page = loadPage(capabilityHtml(capabilityOf("read")), { path: "/cockpit/capabilities/team.look", scripts: ["run-form.js"], confirm: false });
    pages.push(page);
    expect(submit(page, "call")).toBe(true);
    expect(submit(page, "start")).toBe(true);
    expect(page.confirms).toEqual([]);
    expect(page.document.querySelector("[data-confirmed]")).toBeNull();
  });
});

import { afterEach, describe, expect, test } from "bun:test";
import { loadPage, ORIGIN, type LoadedPage } from "./_support/dom.ts";
import { capabilityHtml, capabilityOf, event, ID, overviewHtml, runningSnapshot } from "./_support/fixtures.ts";

const pages: LoadedPage[] = [];

afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
});

const OTHER = "x-20260908T010204Z-deadbeef";

describe("live-list.js", () => {
  test("live-list.js keeps the overview's rows and counts current over the every-execution channel", () => {
    const page = loadPage(overviewHtml([runningSnapshot()]), { path: "/cockpit", scripts: ["socket.js", "format.js", "live-list.js"] });
    pages.push(page);
    const doc = page.document;
    const count = (state: string) => doc.querySelector(`[data-count="${state}"]`)!.textContent;
    const rowsOf = (table: string) => [...doc.querySelectorAll(`[data-execution-table="${table}"] tr[data-execution-row]`)].map((r) => r.getAttribute("data-execution-row"));
    // Every execution, live only: no cursor.
    expect(page.sockets[0]!.url).toBe(`${ORIGIN.replace("http", "ws")}/events`);
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive({ type: "stream.ready", subscribed: "all", replayed: 0, truncated: false, heartbeat_ms: 20_000 });

    socket.receive(event(1, "execution.created", { capability: "team.<b>echo</b>", input: {}, actor: { kind: "cli", pid: 42 }, run_id: null, session_key: null }, OTHER));
    expect(rowsOf("active")).toEqual([OTHER, ID]);
    expect(rowsOf("recent")).toEqual([OTHER, ID]);
    const row = doc.querySelector(`[data-execution-table="recent"] tr[data-execution-row="${OTHER}"]`)!;
    expect(row.querySelector('[data-cell="link"]')!.getAttribute("href")).toBe(`/cockpit/executions/${OTHER}`);
    expect(row.querySelector('[data-cell="capability"]')!.textContent).toBe("team.<b>echo</b>");
    expect(row.querySelector("b")).toBeNull();
    expect(row.querySelector('[data-cell="actor"]')!.textContent).toBe("docket run (pid 42)");
    expect(row.querySelector('[data-cell="state"]')!.textContent!.replace(/\s+/g, " ").trim()).toBe("○ Queued");
    expect(count("queued")).toBe("1");

    socket.receive(event(2, "execution.started", {}, OTHER));
    socket.receive(event(2, "execution.started", {}, OTHER));
    expect([count("queued"), count("running")]).toEqual(["0", "2"]);
    socket.receive(event(3, "execution.progress", { current: 1, total: 4 }, OTHER));
    expect(row.querySelector('[data-cell="progress"]')!.textContent).toBe("1 of 4 (25%)");

    socket.receive(event(4, "execution.completed", { state: "failed", duration_ms: 2500 }, OTHER));
    expect(rowsOf("active")).toEqual([ID]);
    expect(row.getAttribute("data-state")).toBe("failed");
    expect(row.querySelector('[data-cell="state"]')!.textContent).toContain("Failed");
    expect(row.querySelector('[data-cell="duration"]')!.textContent).toBe("2.50 s");
    expect([count("running"), count("failed")]).toEqual(["1", "1"]);

    socket.receive(event(3, "execution.cancel_requested", { actor: { kind: "http" } }));
    socket.receive(event(4, "execution.completed", { state: "cancelled", duration_ms: 1 }));
    expect(rowsOf("active")).toEqual([]);
    expect(doc.querySelector('[data-execution-table="active"] [data-empty]')!.hasAttribute("hidden")).toBe(false);
    expect([count("running"), count("cancelling"), count("cancelled")]).toEqual(["0", "0", "1"]);
  });

  test("live-list.js says that some changes may be missing once the every-execution channel came back", () => {
    const page = loadPage(overviewHtml([]), { path: "/cockpit", scripts: ["socket.js", "format.js", "live-list.js"], random: () => 0 });
    pages.push(page);
    const notice = page.document.querySelector('[data-slot="resync"]')!;
    page.sockets[0]!.open();
    page.sockets[0]!.receive({ type: "stream.ready", subscribed: "all", heartbeat_ms: 20_000 });
    expect(notice.hasAttribute("hidden")).toBe(true);
    page.sockets[0]!.lose();
    page.clock.advance(250);
    page.sockets[1]!.open();
    page.sockets[1]!.receive({ type: "stream.ready", subscribed: "all", heartbeat_ms: 20_000 });
    expect(page.sockets[1]!.url).toBe(`${ORIGIN.replace("http", "ws")}/events`);
    expect(notice.hasAttribute("hidden")).toBe(false);
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

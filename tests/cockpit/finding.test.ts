import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { closeParsed, parseHtml } from "./_support/html.ts";
import { markdownHtml, markdownInlineHtml } from "../../cockpit/markdown.ts";
import { relativeTime, checkoutPath } from "../../cockpit/format.ts";

let server: CockpitServer;

beforeAll(async () => {
  server = await startCockpitServer();
});

afterAll(async () => {
  await closeParsed();
  await server.stop();
});

describe("cockpit: finding things", () => {
  test("the capabilities page lists the checkout's own capabilities first, the built-ins in their own group", async () => {
    const doc = parseHtml((await server.page("/cockpit/capabilities")).html);
    const groups = [...doc.querySelectorAll("table[data-group]")].map((t) => t.getAttribute("data-group"));
    expect(groups).toEqual(["own", "builtin"]);
    const own = [...doc.querySelectorAll('[data-group="own"] [data-capability]')].map((row) => row.getAttribute("data-capability"));
    expect(own).toEqual(["team.deploy", "team.echo", "team.gate", "team.report", "team.sleep"]);
    expect(doc.querySelector('[data-group="builtin"] [data-capability="files.digest"]')).not.toBeNull();
    expect(doc.querySelector('[data-group="own"] [data-capability="files.digest"]')).toBeNull();
    // Paths are the checkout's, not the machine's; the full path is on hover.
    const source = doc.querySelector('[data-capability="team.report"] td:last-child')!;
    expect(source.textContent!.trim()).toBe("capabilities/team.report.ts");
    expect(source.getAttribute("title")).toBe(`${server.root}/capabilities/team.report.ts`);
    expect(doc.querySelector("[data-load-error] td")!.textContent!.trim()).toBe("capabilities/team.broken.ts");
  });

  test("the capability search is a plain GET query: every word must match id, title or description", async () => {
    const found = parseHtml((await server.page("/cockpit/capabilities?q=SIZES%20csv")).html);
    expect([...found.querySelectorAll("[data-capability]")].map((row) => row.getAttribute("data-capability"))).toEqual(["team.report"]);
    expect(found.querySelector('[data-slot="search-result"]')!.textContent).toContain("1 of");
    expect(found.querySelector('input[name="q"]')!.getAttribute("value")).toBe("SIZES csv");
    const none = parseHtml((await server.page("/cockpit/capabilities?q=%3Cscript%3Enothing")).html);
    expect(none.querySelectorAll("[data-capability]").length).toBe(0);
    expect(none.querySelector('[data-section="own"] .empty')!.textContent).toContain("None of this checkout's capabilities match");
    expect((await server.page("/cockpit/capabilities?q=%3Cscript%3Enothing")).html).not.toContain("<script>nothing");
  });

  test("descriptions are Markdown, rendered safely: raw HTML is text and script URLs are not links", () => {
    expect(markdownHtml("Measures **three** things")).toBe("<p>Measures <strong>three</strong> things</p>\n");
    expect(markdownHtml("<script>alert(1)</script> and <img src=x onerror=alert(1)>")).not.toContain("<script");
    expect(markdownHtml("<script>alert(1)</script>")).toContain("&lt;script&gt;");
    expect(markdownHtml("[click](javascript:alert(1))")).not.toContain('href="javascript:');
    expect(markdownHtml("![x](http://example.com/x.png)")).not.toContain("<img");
    expect(markdownInlineHtml("First `code` paragraph.\n\nSecond one.")).toBe("First <code>code</code> paragraph.");
    // A heading or a list item is summarised without its mark, and a heading is never a second h1 (cockpit tester, session 43).
    expect(markdownInlineHtml("# Release notes\n\nMore.")).toBe("Release notes");
    expect(markdownInlineHtml("- **Checks** the links")).toBe("<strong>Checks</strong> the links");
    expect(markdownHtml("# Usage\n\n## Flags")).toBe("<h3>Usage</h3>\n<h4>Flags</h4>\n");
  });

  test("a capability page renders its Markdown description", async () => {
    const doc = parseHtml((await server.page("/cockpit/capabilities/team.report")).html);
    expect(doc.querySelector(".markdown strong")!.textContent).toBe("three");
  });

  test("times read as how long ago, with the absolute time on hover", async () => {
    const now = Date.parse("2026-09-08T12:00:00.000Z");
    expect(relativeTime("2026-09-08T11:59:58.000Z", now)).toBe("just now");
    expect(relativeTime("2026-09-08T11:59:18.000Z", now)).toBe("42 s ago");
    expect(relativeTime("2026-09-08T11:55:00.000Z", now)).toBe("5 min ago");
    expect(relativeTime("2026-09-08T09:00:00.000Z", now)).toBe("3 h ago");
    expect(relativeTime("2026-09-07T11:00:00.000Z", now)).toBe("1 day ago");
    expect(relativeTime("2026-09-01T12:00:00.000Z", now)).toBe("7 days ago");
    expect(checkoutPath("/work/x/capabilities/a.ts", "/work/x")).toBe("capabilities/a.ts");
    expect(checkoutPath("/elsewhere/a.ts", "/work/x")).toBe("/elsewhere/a.ts");
    const id = await server.start("team.echo", { message: "hi" });
    await server.completed(id);
    const doc = parseHtml((await server.page("/cockpit/executions")).html);
    const created = doc.querySelector(`[data-execution-row="${id}"] [data-cell="created"] time`)!;
    expect(created.textContent).toMatch(/just now|\d+ s ago/);
    expect(created.getAttribute("title")).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(created.hasAttribute("data-local-time")).toBe(true);
  });
});

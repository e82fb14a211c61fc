// "5 min ago" stays true on a page left open, and every time's hover is in the reader's zone —
// the rows a live list puts in after load too (cockpit tester, session 43).
import { describe, expect, test } from "bun:test";
import { loadPage } from "./_support/dom.ts";

const AT = "2026-09-08T01:02:03.000Z";

describe("format.js: times on a page left open", () => {
  test("relative times are written again as time passes, and times put in later are localised on hover", () => {
    const html = `<!doctype html><html><body><main><time datetime="${AT}" title="2026-09-08 01:02:03 UTC" data-local-time>just now</time></main></body></html>`;
    const page = loadPage(html, { path: "/cockpit", scripts: ["format.js"] });
    const first = page.document.querySelector("time")!;
    expect(first.getAttribute("title")).toMatch(/^2026-09-08 \d\d:02:03 \(.+\) · 2026-09-08 01:02:03 UTC$/);
    page.clock.advance(75_000);
    expect(first.textContent).toBe("1 min ago");
    page.clock.advance(3_600_000);
    expect(first.textContent).toBe("1 h ago");
    // A row a live list puts in: its time is localised once, like the server's.
    const row = page.document.createElement("div");
    row.innerHTML = `<time datetime="${AT}" title="2026-09-08 01:02:03 UTC" data-local-time>1 h ago</time>`;
    page.document.querySelector("main")!.appendChild(row);
    return new Promise<void>((resolve) => {
      setTimeout(() => {
        const added = row.querySelector("time")!;
        expect(added.getAttribute("title")).toMatch(/^2026-09-08 \d\d:02:03 \(.+\) · 2026-09-08 01:02:03 UTC$/);
        expect(added.hasAttribute("data-localised")).toBe(true);
        resolve();
      }, 20);
    });
  });

  test("relative is format.ts's relativeTime, word for word", async () => {
    const { relativeTime } = await import("../../cockpit/format.ts");
    const page = loadPage("<!doctype html><html><body></body></html>", { path: "/cockpit", scripts: ["format.js"] });
    const relative = (page.window as unknown as { docket: { format: { relative(iso: string, now: number): string } } }).docket.format.relative;
    const base = Date.parse(AT);
    for (const ms of [0, 4_000, 5_000, 59_000, 61_000, 3_599_000, 3_600_000, 86_399_000, 86_400_000, 172_800_000, -10_000, -7_200_000]) {
      expect(relative(AT, base + ms)).toBe(relativeTime(AT, base + ms));
    }
    expect(relative("not a time", base)).toBe(relativeTime("not a time", base));
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { BROWSER_TESTS, launchChromium, watchedContext } from "./_support/browser.ts";

// The live pages in a real headless Chromium against a running server, where what they follow
// changes at the moments that are hard to hit by hand: while the page loads, in a flood.
const TEST_TIMEOUT = 60_000;
const WAIT = { timeout: 20_000 };

/** Waits for its gate file (`.gate-<name>-1`), then fails or succeeds as asked: an end the test decides. */
const flaky = (id: string) => `import { capability } from "docket";
import * as v from "valibot";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
export default capability({
  id: "${id}", title: "Flaky", description: "Waits for its gate file, then fails or succeeds.", effect: "read",
  input: v.object({ name: v.pipe(v.string(), v.regex(/^[a-z0-9-]{1,40}$/)), fail: v.boolean() }),
  output: v.object({ ok: v.boolean() }),
  async handler(input, ctx) {
    while (!existsSync(join(ctx.root, ".gate-" + input.name + "-1"))) await delay(5);
    if (input.fail) throw new Error("failed as asked");
    return { ok: true };
  },
});
`;

let server: CockpitServer;
let browser: Browser;
let context: BrowserContext;
const problems: string[] = [];

/**
 * A page whose live channel connects only when the test says: what happens before then happened
 * between the page's drawing and its subscription.
 */
async function pageWithHeldChannel(): Promise<{ page: Page; connect(): void }> {
  const page = await context.newPage();
  let held: WebSocketRoute | null = null;
  let open = false;
  await page.routeWebSocket(/\/events(\?|$)/, (ws) => {
    if (open) ws.connectToServer();
    else held = ws;
  });
  return {
    page,
    connect() {
      open = true;
      held?.connectToServer();
    },
  };
}

describe.skipIf(!BROWSER_TESTS)("live cockpit pages in headless Chromium", () => {
  beforeAll(async () => {
    server = await startCockpitServer({ max_concurrent: 4 }, { "team.flaky.ts": flaky("team.flaky"), "team.wobbly.ts": flaky("team.wobbly"), "team.burst.ts": flaky("team.burst") });
    browser = await launchChromium();
    context = await watchedContext(browser, problems, { width: 1280, height: 900 });
  }, TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  }, TEST_TIMEOUT);

  for (const path of ["/cockpit", "/cockpit/executions"]) {
    test(`${path} shows an execution that ended while the page loaded as ended, with counts from the server`, async () => {
      const name = path === "/cockpit" ? "load-overview" : "load-list";
      const id = await server.start("team.gate", { name, steps: 1 });
      const { page, connect } = await pageWithHeldChannel();
      await page.goto(server.url + path);
      const row = page.locator(`tr[data-execution-row="${id}"]`).first();
      expect(await row.getAttribute("data-state")).toBe("running");
      server.openGate(name, 1);
      await server.completed(id);
      connect();
      await page.waitForSelector('[data-docket-connection][data-state="live"]', WAIT);
      await page.waitForSelector(`tr[data-execution-row="${id}"][data-state="succeeded"]`, WAIT);
      expect(await page.locator(`tr[data-execution-row="${id}"]:not([data-state="succeeded"])`).count()).toBe(0);
      const counts = (await (await fetch(`${server.url}/api/v1/executions?limit=1`)).json()) as { counts: Record<string, number> };
      await page.waitForFunction((running) => document.querySelector('[data-count="running"]')!.textContent === String(running), counts.counts.running, WAIT);
      expect(await page.textContent('[data-count="succeeded"]')).toBe(String(counts.counts.succeeded));
      await page.close();
    }, TEST_TIMEOUT);
  }

  for (const filter of ["state=failed&capability=team.flaky", "state=failed"]) {
    test(`/cockpit/executions?${filter} offers a reload for each execution that since ended failed there, and for none it would not show`, async () => {
      const byCapability = filter.includes("capability");
      const run = (capability: string, name: string, fail: boolean) => server.start(capability, { name: `${name}-${byCapability ? "c" : "s"}`, fail });
      const end = async (id: string, name: string) => {
        server.openGate(`${name}-${byCapability ? "c" : "s"}`, 1);
        await server.completed(id);
      };
      // Created before the page was drawn (the page never saw which capability they are) and after.
      const before = await run("team.flaky", "before", true);
      const other = await run("team.wobbly", "other", true);
      const page = await context.newPage();
      await page.goto(`${server.url}/cockpit/executions?${filter}`);
      await page.waitForSelector('[data-docket-connection][data-state="live"]', WAIT);
      const after = await run("team.flaky", "after", true);
      const fine = await run("team.flaky", "fine", false);
      const notice = page.locator('[data-slot="resync"]');
      expect(await notice.isHidden()).toBe(true);
      // What this list would not show ends first: (by capability) one of another capability that failed, and one that succeeded.
      await end(other, "other");
      await end(fine, "fine");
      await end(before, "before");
      await end(after, "after");
      const wanted = byCapability ? "2 new executions match this list" : "3 new executions match this list";
      await page.waitForFunction((text) => document.querySelector('[data-slot="resync"]')!.textContent!.includes(text), wanted, WAIT);
      expect(await notice.isVisible()).toBe(true);
      // The reload it offers shows them.
      await Promise.all([page.waitForEvent("load", WAIT), notice.locator("[data-reload]").click()]);
      await page.waitForSelector(`tr[data-execution-row="${after}"][data-state="failed"]`, WAIT);
      const shown = await page.locator('[data-execution-table="list"] tr[data-execution-row]').evaluateAll((rows) => rows.map((row) => row.getAttribute("data-execution-row")));
      expect(shown).toContain(before);
      expect(shown.includes(other)).toBe(!byCapability);
      expect(shown).not.toContain(fine);
      await page.close();
    }, TEST_TIMEOUT);
  }

  test("/cockpit/executions?state=failed&capability=… asks where a burst of failures sits with its counts' re-reads: never two requests in flight", async () => {
    // Created before the page was drawn, so the page cannot know their capability and asks the
    // server; they fail once the gate opens, four at a time, then the queued ones at once.
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(await server.start("team.burst", { name: "burst", fail: true }));
    const page = await context.newPage();
    // Every re-read the page sends is counted while the server has not answered it; the first
    // (once the channel is ready) is answered only after the burst, so all of it comes meanwhile.
    let inFlight = 0;
    let mostInFlight = 0;
    let sections = 0;
    let releaseFirst = () => {};
    const firstHeld = new Promise<void>((held) => {
      void page.route(/[?&]section=/, async (route) => {
        inFlight++;
        mostInFlight = Math.max(mostInFlight, inFlight);
        const first = sections++ === 0;
        const response = await route.fetch();
        if (first) {
          await new Promise<void>((release) => {
            releaseFirst = release;
            held();
          });
        }
        inFlight--;
        await route.fulfill({ response });
      });
    });
    await page.goto(`${server.url}/cockpit/executions?state=failed&capability=team.burst`);
    await firstHeld;
    server.openGate("burst", 1);
    for (const id of ids) await server.completed(id);
    releaseFirst();
    await page.waitForFunction(() => document.querySelector('[data-slot="new-count"]')!.textContent === "40 new executions match this list", undefined, WAIT);
    expect(sections).toBeGreaterThan(1);
    expect(mostInFlight).toBe(1);
    await page.close();
  }, TEST_TIMEOUT);

  test("no page reported a console error, an uncaught error or a CSP violation", () => {
    expect(problems).toEqual([]);
  });
});

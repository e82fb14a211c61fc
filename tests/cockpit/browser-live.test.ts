import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { BROWSER_TESTS, launchChromium, watchedContext } from "./_support/browser.ts";

// The live pages in a real headless Chromium against a running server, where what they follow
// changes at the moments that are hard to hit by hand: while the page loads, in a flood.
const TEST_TIMEOUT = 60_000;
const WAIT = { timeout: 20_000 };

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
    server = await startCockpitServer();
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

  test("no page reported a console error, an uncaught error or a CSP violation", () => {
    expect(problems).toEqual([]);
  });
});

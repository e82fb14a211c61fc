import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";

// The cockpit in a real headless Chromium against a running server (README.md). Debian's chromium
// is what .ci/run installs; without it the test is skipped locally and fails in CI.
const CHROMIUM = process.env.DOCKET_CHROMIUM ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && !process.env.CI) {
  console.warn(`tests/cockpit/browser.test.ts skipped: no Chromium at ${CHROMIUM} (install Debian's chromium, or set DOCKET_CHROMIUM). In CI this fails instead.`);
}

/** A browser test's own time limit: it awaits what it waits for, this only bounds a hang. */
const TEST_TIMEOUT = 60_000;

/** Where the screenshot of an execution page goes, for a person to look at. */
const SCREENSHOT = "/tmp/docket-cockpit-execution.png";
const WAIT = { timeout: 20_000 };

let server: CockpitServer;
let browser: Browser;
let context: BrowserContext;
/** Console errors, page errors and CSP violations of every page opened, as text. */
const problems: string[] = [];

/** A page that reports its console errors, uncaught errors and CSP violations into `problems`. */
async function openPage(on: BrowserContext = context): Promise<Page> {
  const page = await on.newPage();
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") problems.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  return page;
}

describe.skipIf(!available && !process.env.CI)("the cockpit in headless Chromium", () => {
  beforeAll(async () => {
    if (!available) throw new Error(`CI must run the browser tests, but there is no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium package.`);
    server = await startCockpitServer();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.exposeBinding("__docketViolation", (_source, text: string) => problems.push(`CSP violation: ${text}`));
    await context.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (event) => {
        (window as unknown as { __docketViolation(text: string): void }).__docketViolation(`${event.violatedDirective} blocked ${event.blockedURI}`);
      });
    });
  }, TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  }, TEST_TIMEOUT);

  test("Run as execution from the generated form lands on the execution page, which goes live to succeeded", async () => {
    const page = await openPage();
    const sockets: string[] = [];
    page.on("websocket", (ws) => sockets.push(ws.url()));
    const state = () => page.getAttribute("[data-docket-execution]", "data-state");
    await page.goto(`${server.url}/cockpit/capabilities/team.gate`);
    await page.fill('[name="input.name"]', "form");
    await page.fill('[name="input.steps"]', "3");
    await page.click('button[value="start"]');
    await page.waitForURL(/\/cockpit\/executions\/x-\d{8}T\d{6}Z-[0-9a-f]{8}$/, WAIT);
    // Marks this document: a reload would lose it, so all that follows arrives over the socket.
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    const rendered = Number(await page.getAttribute("[data-docket-execution]", "data-after"));
    await page.waitForSelector('[data-docket-connection][data-state="live"]', WAIT);
    expect(sockets[0]).toMatch(new RegExp(`^ws://127\\.0\\.0\\.1:\\d+/events\\?execution=x-[^&]+&after=${rendered}$`));
    // Gate 1 is shut: the execution runs its first step and waits.
    await page.waitForSelector('[data-slot="steps"] tr[data-step-id="step-1"] [data-step-state="running"]', WAIT);
    expect(await state()).toBe("running");
    expect((await page.textContent('[data-slot="state"]'))!.replace(/\s+/g, " ").trim()).toBe("▶ Running");
    for (const step of [1, 2, 3]) {
      server.openGate("form", step);
      await page.waitForSelector(`[data-slot="steps"] tr[data-step-id="step-${step}"] [data-step-state="succeeded"]`, WAIT);
      await page.waitForSelector(`progress[data-slot="progress"][value="${step}"]`, WAIT);
    }
    await page.waitForSelector('[data-docket-execution][data-state="succeeded"]', WAIT);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);
    expect((await page.textContent('[data-slot="state"]'))!.replace(/\s+/g, " ").trim()).toBe("✓ Succeeded");
    expect(await page.locator('[data-slot="steps"] tr[data-step-id]').count()).toBe(3);
    expect(await page.textContent('[data-slot="progress-text"]')).toBe("3 of 3 (100%) — gate 3 passed");
    expect(await page.isVisible('[data-section="output"]')).toBe(true);
    expect(JSON.parse((await page.textContent('[data-slot="output"]'))!)).toEqual({ steps: 3 });
    expect(await page.locator('[data-slot="cancel"]').count()).toBe(0);
    expect((await page.textContent("[data-docket-connection]"))!).toContain("Finished");
    expect(sockets).toHaveLength(1);
    await page.close();
  }, TEST_TIMEOUT);

  test("a reload mid-run renders the page at its sequence and continues live from there, nothing twice", async () => {
    const id = await server.start("team.gate", { name: "reload", steps: 3 });
    const page = await openPage();
    const sockets: string[] = [];
    page.on("websocket", (ws) => sockets.push(ws.url()));
    await page.goto(`${server.url}/cockpit/executions/${id}`);
    await page.waitForSelector('[data-docket-connection][data-state="live"]', WAIT);
    server.openGate("reload", 1);
    await page.waitForSelector('tr[data-step-id="step-2"]', WAIT);
    await page.reload();
    const rendered = Number(await page.getAttribute("[data-docket-execution]", "data-after"));
    // The reloaded page shows what happened before it, as served.
    expect(await page.locator('tr[data-step-id="step-1"] [data-step-state="succeeded"]').count()).toBe(1);
    await page.waitForSelector('[data-docket-connection][data-state="live"]', WAIT);
    expect(sockets[sockets.length - 1]).toEndWith(`&after=${rendered}`);
    server.openGate("reload", 2);
    server.openGate("reload", 3);
    await page.waitForSelector('[data-docket-execution][data-state="succeeded"]', WAIT);
    const sequences = await page.$$eval('[data-slot="log"] .log-line', (lines) => lines.map((l) => Number(l.getAttribute("data-sequence"))));
    expect(sequences).toHaveLength(3);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(3);
    expect(await page.locator('[data-slot="steps"] tr[data-step-id]').count()).toBe(3);
    await page.close();
  }, TEST_TIMEOUT);

  test("an execution page with steps, progress, diagnostics, log and output reads well (screenshot)", async () => {
    const id = await server.start("executions.demonstrate", { steps: 4, delay_ms: 0 });
    await server.completed(id);
    const page = await openPage();
    await page.goto(`${server.url}/cockpit/executions/${id}`);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect((await page.textContent('[data-slot="state"]'))!).toContain("Succeeded");
    await page.close();
  }, TEST_TIMEOUT);

  test("Cancel on a long execution shows it cancelled", async () => {
    const id = await server.start("executions.demonstrate", { steps: 50, delay_ms: 60_000 });
    const page = await openPage();
    await page.goto(`${server.url}/cockpit/executions/${id}`);
    await page.waitForSelector('[data-docket-connection][data-state="live"]', WAIT);
    await page.click('[data-slot="cancel"] button');
    await page.waitForSelector('[data-docket-execution][data-state="cancelled"]', WAIT);
    expect((await page.textContent('[data-slot="state"]'))!.replace(/\s+/g, " ").trim()).toBe("⊘ Cancelled");
    expect(await page.locator('[data-slot="cancel"]').count()).toBe(0);
    expect(await page.textContent('[data-slot="notice"]')).toContain("Cancel");
    await page.close();
  }, TEST_TIMEOUT);

  test("a write capability asks for confirmation before it runs; declining runs nothing", async () => {
    const page = await openPage();
    await page.goto(`${server.url}/cockpit/capabilities/team.deploy`);
    await page.selectOption('[name="input.target"]', { label: "staging" });
    await page.fill('[name="input.token"]', "t0ken");
    const dialogs: string[] = [];
    page.once("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.click('button[value="call"]');
    expect(dialogs[0]).toContain("team.deploy may change something");
    expect(await page.locator('[data-section="result"]').count()).toBe(0);
    page.once("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
    await Promise.all([page.waitForNavigation(), page.click('button[value="call"]')]);
    expect(dialogs).toHaveLength(2);
    expect(JSON.parse((await page.textContent('[data-slot="result"]'))!)).toMatchObject({ deployed: "staging", token_length: 5 });
    // A read capability asks nothing.
    const read: string[] = [];
    page.on("dialog", (dialog) => {
      read.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`${server.url}/cockpit/capabilities/team.echo`);
    await page.fill('[name="input.message"]', "hello");
    await Promise.all([page.waitForNavigation(), page.click('button[value="call"]')]);
    expect(read).toEqual([]);
    expect(JSON.parse((await page.textContent('[data-slot="result"]'))!)).toEqual({ message: "hello" });
    await page.close();
  }, TEST_TIMEOUT);

  test("a long path in the log, or a long line in a description's code block, wraps or scrolls in its box instead of widening the page, on a wide and a narrow screen", async () => {
    const path = `deep/${"a-rather-long-folder-name/".repeat(30)}file-with-a-long-name.txt`;
    const id = await server.start("team.echo", { message: path, path });
    await server.completed(id);
    for (const width of [1280, 400]) {
      const page = await openPage();
      await page.setViewportSize({ width, height: 800 });
      await page.goto(`${server.url}/cockpit/executions/${id}`);
      const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
      expect(scroll).toBeLessThanOrEqual(client);
      const box = await page.locator('[data-slot="log"] .log-message').first().boundingBox();
      expect(box!.width).toBeLessThan(width);
      // A description's fenced block with a long line scrolls in its own box (cockpit tester, session 43).
      await page.goto(`${server.url}/cockpit/capabilities/team.report`);
      const described = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
      expect(described.scroll).toBeLessThanOrEqual(described.client);
      expect(await page.locator(".markdown pre").count()).toBe(1);
      await page.close();
    }
  }, TEST_TIMEOUT);

  test("without JavaScript every page is complete and the forms still work", async () => {
    const plain = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
    try {
      const page = await openPage(plain);
      await page.goto(`${server.url}/cockpit`);
      expect(await page.textContent("h1")).toBe("Overview");
      await page.goto(`${server.url}/cockpit/capabilities/executions.demonstrate`);
      await page.fill('[name="input.steps"]', "1");
      await page.fill('[name="input.delay_ms"]', "0");
      await Promise.all([page.waitForURL(/\/cockpit\/executions\/x-/, WAIT), page.click('button[value="start"]')]);
      expect(await page.textContent("[data-docket-connection]")).toMatch(/Snapshot|Finished/);
      // A write without scripts: a box to tick instead of a dialog.
      await page.goto(`${server.url}/cockpit/capabilities/team.deploy`);
      expect(await page.isVisible('.confirm-box input[name="confirmed"]')).toBe(true);
      await page.selectOption('[name="input.target"]', { label: "production" });
      await page.fill('[name="input.token"]', "abc");
      await page.check('.confirm-box input[name="confirmed"]');
      await Promise.all([page.waitForNavigation(), page.click('button[value="call"]')]);
      expect(JSON.parse((await page.textContent('[data-slot="result"]'))!)).toMatchObject({ deployed: "production" });
      await page.close();
    } finally {
      await plain.close();
    }
  }, TEST_TIMEOUT);

  test("the overview updates live as executions start and finish", async () => {
    const page = await openPage();
    await page.goto(`${server.url}/cockpit`);
    await page.waitForSelector('[data-docket-connection][data-state="live"]', WAIT);
    const before = Number(await page.textContent('[data-count="succeeded"]'));
    const id = await server.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
    await page.waitForSelector(`[data-execution-table="recent"] tr[data-execution-row="${id}"][data-state="succeeded"]`, WAIT);
    // The counts are the server's, re-read at most once a second: they follow within it.
    await page.waitForFunction((n) => document.querySelector('[data-count="succeeded"]')?.textContent === String(n), before + 1, WAIT);
    expect(await page.getAttribute(`[data-execution-table="recent"] tr[data-execution-row="${id}"] a`, "href")).toBe(`/cockpit/executions/${id}`);
    await page.close();
  }, TEST_TIMEOUT);

  test("no page logged an error or violated the Content-Security-Policy (the live socket included)", () => {
    expect(problems).toEqual([]);
  }, TEST_TIMEOUT);
});

import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

/** Debian's chromium, which .ci/run installs (playwright cannot download a browser here). */
export const CHROMIUM = process.env.DOCKET_CHROMIUM ?? "/usr/bin/chromium";
/** Whether browser tests run: always in CI (where a missing Chromium fails them), else when it is installed. */
export const BROWSER_TESTS = existsSync(CHROMIUM) || Boolean(process.env.CI);

/** A headless Chromium with the flags this machine needs. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`CI must run the browser tests, but there is no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium package.`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** A browser context whose pages report console errors, page errors and CSP violations into `problems`. */
export async function watchedContext(browser: Browser, problems: string[], viewport: { width: number; height: number }): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  await context.exposeBinding("__docketViolation", (_source, text: string) => problems.push(`CSP violation: ${text}`));
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      (window as unknown as { __docketViolation(text: string): void }).__docketViolation(`${event.violatedDirective} blocked ${event.blockedURI}`);
    });
  });
  context.on("page", (page: Page) => {
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") problems.push(`console ${message.type()}: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  });
  return context;
}

/** How far a page scrolls sideways: 0 when everything fits the viewport's width. */
export function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

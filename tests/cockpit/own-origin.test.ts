import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext } from "playwright-core";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { tempCheckout } from "../server/_support/servers.ts";
import { BROWSER_TESTS, launchChromium } from "./_support/browser.ts";

// A server without a token bound to 127.0.0.1, and another program on [::1] at the same port, in a
// real headless Chromium: that program's pages are not the server's, whatever their port.
const TEST_TIMEOUT = 60_000;

// A write capability whose run leaves a mark in the checkout.
const MARK = `import { capability } from "docket";
import * as v from "valibot";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "probe.mark", title: "Mark", description: "Leaves a file named marked.", effect: "write",
  input: v.object({}), output: v.object({ marked: v.boolean() }),
  handler(_input, ctx) {
    writeFileSync(join(ctx.root, "marked"), "");
    return { marked: true };
  },
});
`;

let root: string;
let server: DocketServer;
let browser: Browser;
let context: BrowserContext;

describe.skipIf(!BROWSER_TESTS)("the server's own origin in headless Chromium", () => {
  beforeAll(async () => {
    registerDocketModules();
    root = tempCheckout();
    mkdirSync(join(root, "capabilities"));
    writeFileSync(join(root, "capabilities", "probe.mark.ts"), MARK);
    server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
    browser = await launchChromium();
    context = await browser.newContext();
  }, TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  }, TEST_TIMEOUT);

  test(
    "a page of another program on [::1] at the server's port can neither run a capability nor open the live channel; a page opened at localhost is sent to the bound address, and acts from there",
    async () => {
      const port = Number(new URL(server.url).port);
      const action = `${server.url}/cockpit/capabilities/probe.mark`;
      const squatter = Bun.serve({
        hostname: "::1",
        port,
        fetch(request) {
          const page =
            new URL(request.url).pathname === "/live"
              ? `<!doctype html><script>const ws = new WebSocket("ws://127.0.0.1:${port}/events?after=0"); ws.onopen = () => (document.title = "open"); ws.onerror = () => (document.title = "refused");</script>`
              : `<!doctype html><form method="post" action="${action}"><input name="mode" value="call"><input name="confirmed" value="1"></form><script>document.forms[0].submit()</script>`;
          return new Response(page, { headers: { "Content-Type": "text/html" } });
        },
      });
      const page = await context.newPage();
      try {
        const answer = page.waitForResponse((response) => response.url() === action);
        await page.goto(`http://[::1]:${port}/`);
        expect((await answer).status()).toBe(403);
        expect(existsSync(join(root, "marked"))).toBe(false);

        await page.goto(`http://[::1]:${port}/live`);
        await page.waitForFunction(() => document.title !== "");
        expect(await page.title()).toBe("refused");
      } finally {
        await squatter.stop(true);
      }

      // The cockpit reached by localhost lands on the bound address, whose forms the Origin check accepts.
      await page.goto(`http://localhost:${port}/cockpit/capabilities/probe.mark`);
      expect(page.url()).toBe(action);
      const status = await page.evaluate(async (to) => (await fetch(to, { method: "POST", body: new URLSearchParams({ mode: "call", confirmed: "1" }) })).status, action);
      expect(status).toBe(200);
      expect(existsSync(join(root, "marked"))).toBe(true);
    },
    TEST_TIMEOUT,
  );

  test(
    "a server asked to bind localhost is at the address it bound: another program's page reached at localhost can neither run a capability nor open the live channel, and the bound address is never sent to localhost",
    async () => {
      const other = tempCheckout();
      mkdirSync(join(other, "capabilities"));
      writeFileSync(join(other, "capabilities", "probe.mark.ts"), MARK);
      const bound = await startServer({ cwd: other, host: "localhost", port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
      const port = Number(new URL(bound.url).port);
      const action = `${bound.url}/cockpit/capabilities/probe.mark`;
      // Chromium tries [::1] for localhost, and finds the squatter there.
      const squatter = Bun.serve({
        hostname: "::1",
        port,
        fetch: () =>
          new Response(
            `<!doctype html><form method="post" action="${action}"><input name="mode" value="call"><input name="confirmed" value="1"></form><script>const ws = new WebSocket("ws://${new URL(bound.url).host}/events"); ws.onopen = () => (document.title = "open"); ws.onerror = () => (document.title = "refused");</script>`,
            { headers: { "Content-Type": "text/html" } },
          ),
      });
      const page = await context.newPage();
      try {
        expect(new URL(bound.url).hostname).toBe("127.0.0.1");
        await page.goto(`http://localhost:${port}/`);
        await page.waitForFunction(() => document.title !== "");
        expect(await page.title()).toBe("refused");
        const answer = page.waitForResponse((response) => response.url() === action);
        await page.evaluate(() => document.forms[0]!.submit());
        expect((await answer).status()).toBe(403);
        await page.waitForURL(action);
        expect(existsSync(join(other, "marked"))).toBe(false);

        await page.goto(`${bound.url}/cockpit`);
        expect(page.url()).toBe(`${bound.url}/cockpit`);
      } finally {
        await page.close();
        await squatter.stop(true);
        await bound.stop();
        rmSync(other, { recursive: true, force: true });
      }
    },
    TEST_TIMEOUT,
  );
});

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

// Signing in to the cockpit of a server with a token, in a real headless Chromium, beside another
// server of the same host: a browser sends a host's cookies to every port of it.
const TEST_TIMEOUT = 60_000;
const TOKEN = "a-browser-token-0123456789abcdef";

// A read capability whose run leaves a mark in the checkout: what a GET that got in did.
const MARK = `import { capability } from "docket";
import * as v from "valibot";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "probe.mark", title: "Mark", description: "Leaves a file named marked.", effect: "read",
  input: v.object({}), output: v.object({ marked: v.boolean() }),
  handler(_input, ctx) {
    writeFileSync(join(ctx.root, "marked"), "");
    return { marked: true };
  },
});
`;

const roots: string[] = [];
const servers: DocketServer[] = [];
let browser: Browser;
let context: BrowserContext;

async function docketServer(): Promise<DocketServer> {
  const root = tempCheckout();
  roots.push(root);
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "probe.mark.ts"), MARK);
  const server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], token: TOKEN, runtime: "bun", mounts: defaultMounts, log: () => undefined });
  servers.push(server);
  return server;
}

describe.skipIf(!BROWSER_TESTS)("cockpit sign-in in headless Chromium", () => {
  beforeAll(async () => {
    registerDocketModules();
    browser = await launchChromium();
    context = await browser.newContext();
  }, TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    for (const server of servers) await server.stop();
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  }, TEST_TIMEOUT);

  test(
    "a signed-in browser never sends the token to another port of the host, whose page cannot use the cookie; a second server's sign-in leaves the first signed in",
    async () => {
      const first = await docketServer();
      const page = await context.newPage();
      expect((await page.goto(`${first.url}/cockpit?token=${TOKEN}`))!.status()).toBe(200);

      // Another server of the same host, on another port: it sees the cookies, and its page calls the capability.
      const received: string[] = [];
      const mark = `${first.url}/api/v1/probe/mark`;
      const other = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch(request) {
          received.push(request.headers.get("cookie") ?? "");
          return new Response(`<!doctype html><img src="${mark}">`, { headers: { "Content-Type": "text/html" } });
        },
      });
      try {
        // The browser blocks the answer's body either way (a JSON answer to an image): whether the call ran is in the checkout.
        const answered = page.waitForEvent("requestfailed", (request) => request.url() === mark);
        await page.goto(`http://127.0.0.1:${other.port}/`);
        await answered;
        expect(received.join("\n")).not.toContain(TOKEN);
        expect(existsSync(join(first.root, "marked"))).toBe(false);
        // What it did receive: the session cookie, which opens nothing from its page (docs/security.md).
        expect(received.join("\n")).toContain(`docket_session_${new URL(first.url).port}=`);
      } finally {
        await other.stop(true);
      }
      // The cockpit's own pages may call it.
      await page.goto(`${first.url}/cockpit`);
      expect(await page.evaluate(async (url) => (await fetch(url)).status, mark)).toBe(200);
      expect(existsSync(join(first.root, "marked"))).toBe(true);

      const second = await docketServer();
      expect((await page.goto(`${second.url}/cockpit?token=${TOKEN}`))!.status()).toBe(200);
      expect((await page.goto(`${first.url}/cockpit`))!.status()).toBe(200);
      expect((await page.goto(`${second.url}/cockpit`))!.status()).toBe(200);
    },
    TEST_TIMEOUT,
  );
});

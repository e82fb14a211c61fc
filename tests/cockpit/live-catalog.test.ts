import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";

// The cockpit's overview follows a live reload in a real headless Chromium (docs/authoring.md,
// "Live reload"): a file that breaks shows as a load error without reloading the page, a fixed
// one clears it, an added one moves the count — and the page's script breaks no CSP rule.
const CHROMIUM = process.env.DOCKET_CHROMIUM ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
const TEST_TIMEOUT = 60_000;
const WAIT = { timeout: 20_000 };

const good = (id: string) =>
  `import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: ${JSON.stringify(id)}, title: "T", description: "D", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`;

let root: string;
let server: DocketServer;
let browser: Browser;

describe.skipIf(!available && !process.env.CI)("the cockpit overview during a live reload", () => {
  beforeAll(async () => {
    registerDocketModules();
    root = realpathSync(mkdtempSync(join(tmpdir(), "docket-cockpit-reload-")));
    mkdirSync(join(root, ".git"));
    mkdirSync(join(root, "capabilities"));
    writeFileSync(join(root, "capabilities", "team.one.ts"), good("team.one"));
    server = await startServer({
      cwd: root,
      port: 0,
      storeKind: "memory",
      limits: resolveLimits(),
      capabilityDirs: [],
      runtime: "bun",
      importFile: (path) => import(path),
      mounts: defaultMounts,
      log: () => undefined,
      watchOptions: { debounceMs: 30 },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
  }, TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  }, TEST_TIMEOUT);

  test("the overview shows a file that breaks as a load error, and its fix, without a page reload", async () => {
    const problems: string[] = [];
    const page = await browser.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${server.url}/cockpit`);
    await page.waitForSelector('[data-load-errors="0"]', WAIT);
    // Marked on the window: a full navigation would lose it, so the checks below prove no reload happened.
    await page.evaluate(() => ((window as unknown as { stay: boolean }).stay = true));
    const count = async () => (await page.textContent('[data-catalog-slot="count"]'))?.trim().split(" ")[0];
    const before = Number(await count());

    writeFileSync(join(root, "capabilities", "team.one.ts"), 'import { capability } from "docket";\nexport default capability({ id: "team.one",\n  oops oops\n});\n');
    await page.waitForSelector("tr[data-load-error]", WAIT);
    expect(await page.textContent("tr[data-load-error]")).toContain("team.one.ts");
    expect(Number(await count())).toBe(before - 1);

    writeFileSync(join(root, "capabilities", "team.one.ts"), good("team.one"));
    writeFileSync(join(root, "capabilities", "team.two.ts"), good("team.two"));
    await page.waitForSelector('[data-load-errors="0"]', WAIT);
    await page.waitForFunction((n) => document.querySelector('[data-catalog-slot="count"]')?.textContent?.trim().startsWith(`${n} `), before + 1, WAIT);
    expect(await page.evaluate(() => (window as unknown as { stay?: boolean }).stay)).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  }, TEST_TIMEOUT);
});

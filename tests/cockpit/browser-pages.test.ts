import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext } from "playwright-core";
import { REPORT_CSV, startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { BROWSER_TESTS, horizontalOverflow, launchChromium, watchedContext } from "./_support/browser.ts";

// The execution page's shapes, pictures, artifacts and Run again, in a real headless Chromium
// against a running server, at a desktop width and a phone's.
const TEST_TIMEOUT = 60_000;
const WAIT = { timeout: 20_000 };
const WIDTHS = [1280, 390] as const;

let server: CockpitServer;
let browser: Browser;
let wide: BrowserContext;
let narrow: BrowserContext;
const problems: string[] = [];
/**
 * Screenshots of every page at both widths, for a person to look at. Those of runs over an hour
 * old are removed (a run going on beside this one keeps its own).
 */
for (const old of readdirSync(tmpdir())) {
  const path = join(tmpdir(), old);
  const age = old.startsWith("docket-cockpit-shots-") ? Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) : 0;
  if (age > 3_600_000) rmSync(path, { recursive: true, force: true });
}
const shots = mkdtempSync(join(tmpdir(), "docket-cockpit-shots-"));
let reportId = "";

describe.skipIf(!BROWSER_TESTS)("cockpit pages in headless Chromium", () => {
  beforeAll(async () => {
    server = await startCockpitServer();
    browser = await launchChromium();
    wide = await watchedContext(browser, problems, { width: WIDTHS[0], height: 900 });
    narrow = await watchedContext(browser, problems, { width: WIDTHS[1], height: 844 });
    reportId = await server.start("team.report", { label: "sizes" });
    await server.completed(reportId);
    console.log(`cockpit screenshots: ${shots}`);
  }, TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  }, TEST_TIMEOUT);

  test("an execution page lists its artifacts, and the download has the SHA-256 it shows", async () => {
    const page = await wide.newPage();
    await page.goto(`${server.url}/cockpit/executions/${reportId}`);
    const row = page.locator('[data-section="artifacts"] tr[data-artifact="sizes.csv"]');
    await row.waitFor(WAIT);
    const expected = createHash("sha256").update(REPORT_CSV).digest("hex");
    expect((await row.locator('[data-field="sha256"]').textContent())!.trim()).toBe(expected);
    const href = await row.locator("a").getAttribute("href");
    const download = await page.request.get(server.url + href);
    expect(download.status()).toBe(200);
    expect(createHash("sha256").update(await download.body()).digest("hex")).toBe(expected);
    // Release asks for an explicit confirmation in the form itself.
    expect(await page.locator('[data-slot="release"] input[name="confirmed"][required]').count()).toBe(1);
    await page.close();
  }, TEST_TIMEOUT);

  test("an array-of-objects output is a table that sorts by a column, with the JSON a click away", async () => {
    const page = await wide.newPage();
    await page.goto(`${server.url}/cockpit/executions/${reportId}`);
    const table = page.locator('[data-section="output"] table[data-sortable]');
    await table.waitFor(WAIT);
    const names = () => table.locator("tbody tr td:first-child").allTextContents();
    expect(await names()).toEqual(["alpha", "beta", "gamma"]);
    await table.locator('th:has-text("size") button').click();
    expect(await names()).toEqual(["alpha", "gamma", "beta"]);
    await table.locator('th:has-text("size") button').click();
    expect(await names()).toEqual(["beta", "gamma", "alpha"]);
    expect(await page.getAttribute('[data-section="output"] th:has-text("size")', "aria-sort")).toBe("descending");
    // The long text is a text block, the short fields read as values, and the exact JSON is there.
    expect(await page.locator('[data-section="output"] pre.output-text').textContent()).toContain("Second line.");
    await page.click('[data-section="output"] details.json-view summary');
    expect(JSON.parse((await page.textContent('[data-slot="output"]'))!).total).toBe(22);
    await page.close();
  }, TEST_TIMEOUT);

  test("log colours are styled text, markup in a log line stays text, and the filter hides lines in place", async () => {
    const page = await wide.newPage();
    await page.goto(`${server.url}/cockpit/executions/${reportId}`);
    const red = page.locator(".log-message .ansi-red-fg");
    await red.first().waitFor(WAIT);
    expect(await red.first().textContent()).toBe("ERROR");
    expect(await page.evaluate(() => getComputedStyle(document.querySelector(".log-message .ansi-red-fg")!).fontWeight)).toBe("700");
    expect(await page.locator(".log-message .ansi-green-fg").textContent()).toBe("green");
    expect(await page.locator(".log-message", { hasText: "<script>" }).textContent()).toBe("<script>window.__pwned = 1</script><b>not bold</b>");
    expect(await page.locator(".log-message script, .log-message b").count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // The level filter and the search act at once, without a reload.
    const visible = () => page.locator(".log-line:visible").count();
    expect(await visible()).toBe(3);
    await page.selectOption('[name="log_level"]', "error");
    expect(await visible()).toBe(1);
    await page.selectOption('[name="log_level"]', "debug");
    await page.fill('[name="log_q"]', "QUIET");
    expect(await visible()).toBe(1);
    expect(await page.textContent('[data-slot="log-matches"]')).toBe("1 of 3 line(s) match.");
    await page.close();
  }, TEST_TIMEOUT);

  test("the step timeline and the charts are drawn by the server and render in the browser", async () => {
    const execution = await server.page(`/cockpit/executions/${reportId}`);
    expect(execution.html).toMatch(/data-section="timeline"[^>]*>[\s\S]*<svg class="timeline-track"/);
    expect((execution.html.match(/class="timeline-bar timeline-bar-succeeded"/g) ?? []).length).toBe(2);
    const capability = await server.page("/cockpit/capabilities/team.report");
    expect(capability.html).toContain('data-chart="history"');
    expect(capability.html).toMatch(/<title>x-[^<]*: succeeded in/);
    const overview = await server.page("/cockpit");
    expect(overview.html).toContain('data-chart="activity"');
    const page = await wide.newPage();
    await page.goto(`${server.url}/cockpit/executions/${reportId}`);
    expect(await page.locator(".timeline-row").count()).toBe(2);
    const bar = await page.locator(".timeline-bar").first().boundingBox();
    expect(bar!.width).toBeGreaterThan(0);
    await page.goto(`${server.url}/cockpit/capabilities/team.report`);
    expect(await page.locator('[data-chart="history"] circle.marker-succeeded').count()).toBeGreaterThanOrEqual(1);
    await page.goto(`${server.url}/cockpit`);
    expect(await page.locator('[data-chart="activity"] rect.bar-succeeded').count()).toBeGreaterThanOrEqual(1);
    await page.close();
  }, TEST_TIMEOUT);

  test("Run again fills the form with the same input, asks for the secret again, and starts a new execution", async () => {
    const first = await server.start("team.deploy", { target: "staging", token: "s3cret-token", replicas: 3, tags: ["a", "b"] });
    await server.completed(first);
    const page = await wide.newPage();
    await page.goto(`${server.url}/cockpit/executions/${first}`);
    await page.click('[data-slot="run-again"]');
    await page.waitForURL(/\/cockpit\/capabilities\/team\.deploy\?again=/, WAIT);
    expect(await page.inputValue('[name="input.target"]')).toBe('"staging"');
    expect(await page.inputValue('[name="input.replicas"]')).toBe("3");
    expect(await page.inputValue('[name="input.tags"]')).toBe("a\nb");
    expect(await page.inputValue('[name="input.token"]')).toBe("");
    expect(await page.textContent('[data-slot="again"]')).toContain("Type token again");
    await page.fill('[name="input.token"]', "another-token");
    page.once("dialog", (dialog) => dialog.accept());
    await page.click('button[value="start"]');
    await page.waitForURL(/\/cockpit\/executions\/x-/, WAIT);
    const second = decodeURIComponent(page.url().split("/").pop()!);
    expect(second).not.toBe(first);
    await server.completed(second);
    const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${second}`)).json()) as { input: Record<string, unknown>; actor: { kind: string } };
    expect(snapshot.input).toEqual({ target: "staging", token: "[redacted]", replicas: 3, tags: ["a", "b"], dry_run: true });
    expect(snapshot.actor.kind).toBe("cockpit");
    await page.close();
  }, TEST_TIMEOUT);

  test("a nested-object input sent through its generated sub-form reaches the handler intact", async () => {
    const page = await wide.newPage();
    await page.goto(`${server.url}/cockpit/capabilities/team.report`);
    expect(await page.locator('fieldset[data-field="nested"] legend').textContent()).toContain("nested");
    await page.fill('[name="input.label"]', "nested run");
    await page.fill('[name="input.nested.depth"]', "3");
    await page.fill('[name="input.nested.tag"]', "deep <b>tag</b>");
    await page.click('button[value="start"]');
    await page.waitForURL(/\/cockpit\/executions\/x-/, WAIT);
    const id = decodeURIComponent(page.url().split("/").pop()!);
    await server.completed(id);
    const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()) as { input: unknown; output: { nested: unknown } };
    expect(snapshot.input).toEqual({ label: "nested run", nested: { depth: 3, tag: "deep <b>tag</b>" } });
    expect(snapshot.output.nested).toEqual({ depth: 3, tag: "deep <b>tag</b>" });
    await page.close();
  }, TEST_TIMEOUT);

  test("the raw JSON box is marked invalid and described by its problem, as the other fields are, when its JSON does not parse or fails the schema", async () => {
    // A refused form answers 400, which Chromium reports as a console error: expected here alone.
    const refused: string[] = [];
    const own = await watchedContext(browser, refused, { width: WIDTHS[0], height: 900 });
    const page = await own.newPage();
    /** What a screen reader is told of a control: whether it is invalid, and the texts its aria-describedby names. */
    const told = (selector: string) =>
      page.locator(selector).evaluate((control) => ({
        invalid: control.getAttribute("aria-invalid"),
        description: (control.getAttribute("aria-describedby") ?? "")
          .split(" ")
          .filter(Boolean)
          .map((id) => document.getElementById(id)?.textContent?.trim() ?? `(no element #${id})`)
          .join(" | "),
      }));
    const send = async (raw: string) => {
      await page.goto(`${server.url}/cockpit/capabilities/team.echo`);
      await page.fill('[name="input.message"]', "the fields are not read");
      await page.click("details.raw-json summary");
      await page.fill("#raw-json", raw);
      await Promise.all([page.waitForNavigation(WAIT), page.click('button[value="call"]')]);
    };
    // A field's problem: what the raw JSON box must match.
    await page.goto(`${server.url}/cockpit/capabilities/team.deploy`);
    page.on("dialog", (dialog) => void dialog.accept());
    await page.selectOption('[name="input.target"]', "staging");
    await page.fill('[name="input.token"]', "t0ken");
    await page.fill('[name="input.ports"]', "80\nhttp");
    await Promise.all([page.waitForNavigation(WAIT), page.click('button[value="call"]')]);
    const field = await told('[name="input.ports"]');
    expect(field.invalid).toBe("true");
    expect(field.description).toContain("http");

    await send('{"message": ');
    const unparsed = await told("#raw-json");
    expect(unparsed.invalid).toBe("true");
    expect(unparsed.description).toContain("not valid JSON");
    expect(await page.locator("details.raw-json").getAttribute("open")).not.toBeNull();

    await send('{"message": 5}');
    const wrong = await told("#raw-json");
    expect(wrong.invalid).toBe("true");
    expect(wrong.description).toContain("message");

    // Good JSON: nothing to say.
    await send('{"message": "fine"}');
    expect(JSON.parse((await page.textContent('[data-slot="result"]'))!)).toEqual({ message: "fine" });
    expect(await told("#raw-json")).toEqual({ invalid: null, description: "" });
    await own.close();
    expect(refused.filter((problem) => !problem.endsWith("the server responded with a status of 400 (Bad Request)"))).toEqual([]);
  }, TEST_TIMEOUT);

  test("every page reads top-down at 390 px without scrolling sideways (screenshots at both widths)", async () => {
    const pages = ["/cockpit", "/cockpit/capabilities", "/cockpit/capabilities/team.report", "/cockpit/capabilities/team.deploy", "/cockpit/executions", `/cockpit/executions/${reportId}`];
    for (const [index, context] of [wide, narrow].entries()) {
      const page = await context.newPage();
      for (const path of pages) {
        await page.goto(server.url + path);
        await page.waitForLoadState("load");
        if (context === narrow) expect({ path, overflow: await horizontalOverflow(page) }).toEqual({ path, overflow: 0 });
        const name = `${WIDTHS[index]}-${path.replace(/^\/cockpit\/?/, "").replace(/[^a-z0-9.]+/gi, "_") || "overview"}.png`;
        await page.screenshot({ path: join(shots, name), fullPage: true });
      }
      await page.close();
    }
    // A log line keeps its time, level and message on one line where they fit.
    const phone = await narrow.newPage();
    await phone.goto(`${server.url}/cockpit/executions/${reportId}`);
    const line = phone.locator(".log-line", { hasText: "a quiet detail" });
    const [time, level, message] = await Promise.all([line.locator(".log-time").boundingBox(), line.locator(".log-level").boundingBox(), line.locator(".log-message").boundingBox()]);
    expect(Math.abs(time!.y - message!.y)).toBeLessThan(4);
    expect(Math.abs(level!.y - message!.y)).toBeLessThan(4);
    await phone.close();
  }, TEST_TIMEOUT);

  test("the charts' labels stay inside their drawings and apart, and the history's axis words do not overlap, at both widths (cockpit tester, session 50: at 390 px \"2.00 s\" read \"00 s\" and the two times ran into each other)", async () => {
    for (let i = 0; i < 2; i++) await server.completed(await server.start("team.report", { label: `more-${i}` }));
    for (const context of [wide, narrow]) {
      const page = await context.newPage();
      for (const path of ["/cockpit/capabilities/team.report", "/cockpit"]) {
        await page.goto(server.url + path);
        await page.waitForLoadState("load");
        const drawn = await page.$$eval("svg.chart", (charts) =>
          charts.map((chart) => {
            const box = chart.getBoundingClientRect();
            const labels = [...chart.querySelectorAll("text")].filter((text) => text.textContent !== "").map((text) => text.getBoundingClientRect());
            const outside = labels.filter((label) => label.left < box.left - 0.5 || label.right > box.right + 0.5 || label.top < box.top - 0.5 || label.bottom > box.bottom + 0.5).length;
            const overlapping = labels.filter((a, i) => labels.some((b, j) => j !== i && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)).length;
            return { outside, overlapping, labels: labels.length };
          }),
        );
        expect(drawn.length).toBeGreaterThan(0);
        for (const chart of drawn) expect({ path, width: context === wide ? 1280 : 390, ...chart }).toEqual({ path, width: context === wide ? 1280 : 390, outside: 0, overlapping: 0, labels: chart.labels });
      }
      await page.goto(`${server.url}/cockpit/capabilities/team.report`);
      const words = await page.$$eval('[data-slot="history-x"] > span', (spans) => spans.map((span) => span.getBoundingClientRect()).map((r) => [r.left, r.right, r.top, r.bottom]));
      expect(words).toHaveLength(3);
      const apart = words.every(([l, r, t, b], i) => words.every(([l2, r2, t2, b2], j) => i === j || !(l! < r2! && l2! < r! && t! < b2! && t2! < b!)));
      expect(apart).toBe(true);
      await page.close();
    }
  }, TEST_TIMEOUT);

  test("the overview's state counts stay in their tiles with counts of thousands, at both widths (cockpit tester, session 48: 1000 ran into the next tile at 1280 px)", async () => {
    for (const context of [wide, narrow]) {
      const page = await context.newPage();
      await page.goto(`${server.url}/cockpit`);
      await page.waitForLoadState("load");
      const spills = await page.$$eval(".count-tile", (tiles) =>
        tiles.map((tile) => {
          // Counts as a full store shows them (executions_retained is 1,000 by default; more can be kept).
          tile.querySelector(".count")!.textContent = "100000";
          const box = tile.getBoundingClientRect();
          return [...tile.children].map((child) => child.getBoundingClientRect()).filter((inner) => inner.right > box.right + 0.5 || inner.left < box.left - 0.5).length;
        }),
      );
      expect(spills.every((n) => n === 0)).toBe(true);
      await page.close();
    }
  }, TEST_TIMEOUT);

  test("the timeline's steps share one time axis at every width, and at 390 px its tracks are the page's width", async () => {
    // Step 1 done, step 2 running: rows whose words differ in length ("done · …", "running · …").
    const id = await server.start("team.gate", { name: "axis", steps: 2 });
    server.openGate("axis", 1);
    const page = await wide.newPage();
    for (const width of [1280, 480, 390, 360]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${server.url}/cockpit/executions/${id}`);
      await page.locator('.timeline-row[data-step-id="step-2"][data-step-state="running"]').waitFor(WAIT);
      const measure = () =>
        page.$$eval(".timeline-row", (items) =>
          items.map((row) => {
            const track = row.querySelector("svg.timeline-track")!.getBoundingClientRect();
            const bar = row.querySelector("rect.timeline-bar")!.getBoundingClientRect();
            const x = Number(row.querySelector("rect.timeline-bar")!.getAttribute("x"));
            // Where the bar starts on the page, and where the axis (x in percent of the track) puts it.
            return { track: [Math.round(track.left), Math.round(track.right)], start: Math.round(bar.left), onAxis: Math.round(track.left + (x / 100) * track.width) };
          }),
        );
      // The running step's section is drawn again while it runs: rows read as it was swapped out
      // measure nothing (a CI run read a track 0 wide), and are read again from the new one.
      let rows = await measure();
      for (let attempt = 1; attempt < 5 && (rows.length < 2 || rows.some((row) => row.track[1]! - row.track[0]! === 0)); attempt++) {
        await Bun.sleep(100);
        rows = await measure();
      }
      const [one, two] = rows;
      // One axis: the same track edges in every row, wide enough to read.
      expect({ width, track: two!.track }).toEqual({ width, track: one!.track });
      expect(one!.track[1]! - one!.track[0]!).toBeGreaterThan(width < 600 ? width * 0.7 : width * 0.4);
      // Each bar starts where its time puts it on that axis, so step two never starts before step one.
      for (const row of rows) expect(Math.abs(row.start - row.onAxis)).toBeLessThanOrEqual(1);
      expect(two!.start).toBeGreaterThanOrEqual(one!.start);
      expect(await horizontalOverflow(page)).toBe(0);
      // The running step's section is drawn again while it runs: a screenshot that met the swap
      // ("Element is not attached to the DOM", CI saw it once) is taken again of the new one.
      for (let attempt = 1; width === 390; attempt++) {
        try {
          await page.locator('[data-section="timeline"]').screenshot({ path: join(shots, "390-timeline.png"), timeout: 5000 });
          break;
        } catch (error) {
          if (attempt === 3) throw error;
        }
      }
    }
    server.openGate("axis", 2);
    await server.completed(id);
    await page.close();
  }, TEST_TIMEOUT);

  test("no page logged an error or violated the Content-Security-Policy", () => {
    expect(problems).toEqual([]);
  });
});

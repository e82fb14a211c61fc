import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FAILURE_FIELDS } from "../../cockpit/components/failure-panel.tsx";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { closeParsed, parseHtml, textOf } from "./_support/html.ts";

let server: CockpitServer;

beforeAll(async () => {
  server = await startCockpitServer();
});

afterAll(async () => {
  await closeParsed();
  await server.stop();
});

/** The snapshot the API serves for an execution. */
async function snapshot(id: string): Promise<any> {
  return (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json();
}

describe("cockpit pages", () => {
  test("the overview shows running now, recent, counts per state and load errors with file, line and reason", async () => {
    const done = await server.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
    await server.completed(done);
    const running = await server.start("executions.demonstrate", { steps: 50, delay_ms: 60_000 });
    try {
      const { status, html } = await server.page("/cockpit");
      expect(status).toBe(200);
      const doc = parseHtml(html);
      expect(textOf(doc, "h1")).toBe("Overview");
      // Counts per state, each by word and number.
      expect(Number(textOf(doc, '[data-count="succeeded"]'))).toBeGreaterThanOrEqual(1);
      expect(Number(textOf(doc, '[data-count="running"]')) + Number(textOf(doc, '[data-count="queued"]'))).toBeGreaterThanOrEqual(1);
      expect(doc.querySelector('[data-counts] [data-state="failed"]')?.textContent).toContain("Failed");
      // Running now holds the long one; recent holds both.
      const active = doc.querySelector('[data-execution-table="active"]')!;
      expect(active.querySelector(`[data-execution-row="${running}"]`)).not.toBeNull();
      expect(active.querySelector(`[data-execution-row="${done}"]`)).toBeNull();
      const recent = doc.querySelector('[data-execution-table="recent"]')!;
      expect(recent.querySelector(`[data-execution-row="${done}"] [data-cell="state"]`)?.textContent).toContain("Succeeded");
      expect(recent.querySelector(`[data-execution-row="${running}"] a[href="/cockpit/executions/${running}"]`)).not.toBeNull();
      // The file that did not load: file, line, reason.
      const error = doc.querySelector("[data-load-error]")!;
      expect(error.textContent).toContain("team.broken.ts");
      expect(error.querySelectorAll("td")[1]!.textContent).toMatch(/^3(:\d+)?$/);
      expect((error.querySelectorAll("td")[2]!.textContent ?? "").length).toBeGreaterThan(3);
      // Everything the script needs is rendered into the markup.
      const list = doc.querySelector("[data-docket-list]")!;
      expect(list.getAttribute("data-socket")).toBe("/events");
      expect(list.getAttribute("data-execution-url")).toBe("/cockpit/executions/{id}");
      expect(doc.querySelector('template[data-template="execution-row"]')).not.toBeNull();
    } finally {
      await fetch(`${server.url}/api/v1/executions/cancel`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: running }) });
      await server.completed(running);
    }
  });

  test("the capabilities page lists the registry with effect, how it runs, and the load errors", async () => {
    const { status, html } = await server.page("/cockpit/capabilities");
    expect(status).toBe(200);
    const doc = parseHtml(html);
    const deploy = doc.querySelector('[data-capability="team.deploy"]')!;
    expect(deploy.querySelector('a[href="/cockpit/capabilities/team.deploy"]')).not.toBeNull();
    expect(deploy.querySelector('[data-effect="write"]')?.textContent).toContain("Write");
    expect(deploy.textContent).toContain("Deploy the team's service");
    expect(doc.querySelector('[data-capability="executions.get"]')?.textContent).toContain("direct call only");
    expect(doc.querySelector('[data-capability="executions.demonstrate"] [data-effect="read"]')?.textContent).toContain("Read");
    expect(doc.querySelector("[data-load-error]")?.textContent).toContain("team.broken.ts");
  });

  test("a capability page generates its form from the input JSON Schema, with a password box for a secret", async () => {
    const { status, html } = await server.page("/cockpit/capabilities/team.deploy");
    expect(status).toBe(200);
    const doc = parseHtml(html);
    const form = doc.querySelector("form[data-docket-run]")!;
    expect(form.getAttribute("method")).toBe("post");
    expect(form.getAttribute("action")).toBe("/cockpit/capabilities/team.deploy");
    const control = (name: string) => form.querySelector(`[name="input.${name}"]`)!;
    // enum → a select of its values, required
    expect(control("target").tagName).toBe("SELECT");
    expect([...control("target").querySelectorAll("option")].map((o) => o.textContent)).toEqual(["— choose —", "staging", "production"]);
    expect(control("target").hasAttribute("required")).toBe(true);
    // sensitive → password, never prefilled
    expect(control("token").getAttribute("type")).toBe("password");
    expect(control("token").hasAttribute("value")).toBe(false);
    // integer with bounds and a default
    expect(control("replicas").getAttribute("type")).toBe("number");
    expect(control("replicas").getAttribute("min")).toBe("1");
    expect(control("replicas").getAttribute("max")).toBe("10");
    expect(control("replicas").getAttribute("step")).toBe("1");
    expect(control("replicas").getAttribute("value")).toBe("2");
    expect(control("replicas").hasAttribute("required")).toBe(false);
    expect(control("ratio").getAttribute("step")).toBe("any");
    // arrays of scalars → one per line; a boolean → a checkbox with its default; an object → its own fieldset
    expect(control("tags").tagName).toBe("TEXTAREA");
    expect(form.querySelector('[data-field="ports"]')?.getAttribute("data-kind")).toBe("list");
    expect(control("dry_run").getAttribute("type")).toBe("checkbox");
    expect(control("dry_run").hasAttribute("checked")).toBe(true);
    expect(form.querySelector('[data-field="options"]')?.getAttribute("data-kind")).toBe("object");
    expect(form.querySelector('[data-field="options"]')?.tagName).toBe("FIELDSET");
    expect(control("options.region").getAttribute("type")).toBe("text");
    // The group is optional, so its required field is not required of the browser: the server checks.
    expect(control("options.region").hasAttribute("required")).toBe(false);
    expect(control("note").getAttribute("type")).toBe("text");
    // optional vs required, descriptions and bounds as help text
    expect(textOf(form, '[data-field="target"] label')).toContain("required");
    expect(textOf(form, '[data-field="note"] label')).toContain("optional");
    expect(textOf(form, '[data-field="replicas"] .help')).toBe("How many copies. A whole number from 1 to 10. Default: 2.");
    expect(textOf(form, '[data-field="target"] .help')).toContain("Where to deploy.");
    // the raw JSON fallback, both buttons, and confirmation because the effect is write
    expect(form.querySelector('textarea[name="raw_json"]')).not.toBeNull();
    expect(form.querySelector('button[value="call"]')?.textContent).toContain("Run");
    expect(form.querySelector('button[value="start"]')?.textContent).toContain("Run as execution");
    expect(form.getAttribute("data-confirm")).toContain("team.deploy may change something");
    expect(html).toMatch(/<noscript>\s*<label class="confirm-box">\s*<input type="checkbox" name="confirmed" value="1" required=""/);
    // the schemas
    expect(textOf(doc, '[data-slot="input-schema"]')).toContain('"x-docket-sensitive": true');
    expect(textOf(doc, '[data-slot="output-schema"]')).toContain("token_length");
  });

  test("a read capability's form asks no confirmation; a plane capability offers no execution", async () => {
    const read = parseHtml((await server.page("/cockpit/capabilities/executions.demonstrate")).html);
    expect(read.querySelector("form[data-docket-run]")!.hasAttribute("data-confirm")).toBe(false);
    expect(read.querySelector('[name="confirmed"]')).toBeNull();
    expect(read.querySelector('button[value="start"]')).not.toBeNull();
    expect(read.querySelector('[name="input.steps"]')?.getAttribute("value")).toBe("3");
    const plane = parseHtml((await server.page("/cockpit/capabilities/executions.get")).html);
    expect(plane.querySelector('button[value="start"]')).toBeNull();
    expect(plane.querySelector('button[value="call"]')).not.toBeNull();
    expect(plane.querySelector('[name="input.id"]')?.hasAttribute("required")).toBe(true);
  });

  test("an execution page shows state, steps, progress, diagnostics, log, output and input as served", async () => {
    const id = await server.start("executions.demonstrate", { steps: 2, delay_ms: 0 });
    await server.completed(id);
    const x = await snapshot(id);
    const doc = parseHtml((await server.page(`/cockpit/executions/${id}`)).html);
    const root = doc.querySelector("[data-docket-execution]")!;
    expect(root.getAttribute("data-state")).toBe("succeeded");
    expect(root.getAttribute("data-terminal")).toBe("true");
    expect(root.getAttribute("data-after")).toBe(String(x.last_sequence));
    expect(root.getAttribute("data-socket")).toBe(x.links.socket);
    expect(root.getAttribute("data-events")).toBe(x.links.events);
    expect(textOf(doc, '[data-slot="state"]')).toBe("✓ Succeeded");
    const steps = doc.querySelectorAll('[data-slot="steps"] tr[data-step-id]');
    expect([...steps].map((row) => row.getAttribute("data-step-id"))).toEqual(["step-1", "step-2"]);
    expect(steps[0]!.textContent).toContain("Step 1 of 2");
    expect(steps[0]!.querySelector('[data-step-state="succeeded"]')?.textContent).toContain("Done");
    const bar = doc.querySelector('progress[data-slot="progress"]')!;
    expect([bar.getAttribute("value"), bar.getAttribute("max")]).toEqual(["2", "2"]);
    expect(textOf(doc, '[data-slot="progress-text"]')).toBe("2 of 2 (100%) — step 2 done");
    expect(textOf(doc, '[data-slot="diagnostics"] [data-field="code"]')).toBe("demonstration");
    expect(textOf(doc, '[data-slot="diagnostics"] [data-field="location"]')).toBe("capabilities/executions.demonstrate.ts:1");
    const lines = [...doc.querySelectorAll('[data-slot="log"] .log-message')].map((e) => e.textContent);
    expect(lines).toEqual(x.log.map((l: any) => l.message));
    expect(lines[0]).toBe("Demonstrating 2 steps of 0 ms");
    expect(doc.querySelector('[data-section="output"]')!.hasAttribute("hidden")).toBe(false);
    expect(JSON.parse(textOf(doc, '[data-slot="output"]')!)).toEqual(x.output);
    expect(JSON.parse(doc.querySelector('[data-slot="input"]')!.textContent!)).toEqual(x.input);
    expect(doc.querySelector('[data-section="failure"]')!.hasAttribute("hidden")).toBe(true);
    expect(doc.querySelector('[data-slot="cancel"]')).toBeNull();
    expect(textOf(doc, '[data-fact="duration"]')).not.toBe("—");
    expect(textOf(doc, "[data-docket-connection]")).toContain("Finished");
  });

  test("a failed execution's page shows every field of the failure descriptor", async () => {
    const id = await server.start("executions.demonstrate", { steps: 1, delay_ms: 0, fail: true });
    await server.completed(id);
    const x = await snapshot(id);
    const doc = parseHtml((await server.page(`/cockpit/executions/${id}`)).html);
    expect(textOf(doc, '[data-slot="state"]')).toBe("✕ Failed");
    expect(doc.querySelector('[data-section="failure"]')!.hasAttribute("hidden")).toBe(false);
    for (const { key } of FAILURE_FIELDS) {
      const shown = doc.querySelector(`[data-failure-field="${key}"]`)!.textContent!;
      if (key === "context") expect(JSON.parse(shown)).toEqual(x.failure.context);
      else expect(shown).toBe(String(x.failure[key]));
    }
    expect(textOf(doc, '[data-failure-field="error_code"]')).toBe("demonstration_failed");
    expect(doc.querySelector('[data-section="output"]')!.hasAttribute("hidden")).toBe(true);
  });

  test("Cancel is offered only for a cancellable execution that has not finished", async () => {
    const long = await server.start("executions.demonstrate", { steps: 50, delay_ms: 60_000 });
    const sleeping = await server.start("team.sleep", { ms: 300 });
    try {
      const running = parseHtml((await server.page(`/cockpit/executions/${long}`)).html);
      const form = running.querySelector('form[data-slot="cancel"]')!;
      expect(form.getAttribute("action")).toBe(`/cockpit/executions/${long}/cancel`);
      expect(form.querySelector("button")?.textContent).toBe("Cancel");
      expect(running.querySelector("[data-docket-execution]")!.getAttribute("data-terminal")).toBe("false");
      expect(textOf(running, "[data-docket-connection]")).toContain("Snapshot");
      const uncancellable = parseHtml((await server.page(`/cockpit/executions/${sleeping}`)).html);
      expect(uncancellable.querySelector('[data-slot="cancel"]')).toBeNull();
      expect(uncancellable.body.textContent).toContain("cannot be cancelled");
    } finally {
      await server.post(`/cockpit/executions/${long}/cancel`, {});
      await server.completed(long);
      await server.completed(sleeping);
    }
    const cancelled = parseHtml((await server.page(`/cockpit/executions/${long}`)).html);
    expect(textOf(cancelled, '[data-slot="state"]')).toBe("⊘ Cancelled");
    expect(cancelled.querySelector('[data-slot="cancel"]')).toBeNull();
  });

  test("log lines, inputs, streams and diagnostics that hold markup are rendered as text", async () => {
    const hostile = `<script>alert(1)</script><img src=x onerror="alert(2)">`;
    const path = `very/${"long-folder-name/".repeat(20)}file.txt`;
    const id = await server.start("team.echo", { message: hostile, path });
    await server.completed(id);
    const { html } = await server.page(`/cockpit/executions/${id}`);
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    const doc = parseHtml(html);
    // The only scripts are the cockpit's own files; no img came from the message.
    expect([...doc.querySelectorAll("script")].every((s) => (s.getAttribute("src") ?? "").startsWith("/cockpit/assets/"))).toBe(true);
    expect(doc.querySelectorAll("img:not([alt=''])").length).toBe(0);
    expect(doc.querySelector('[data-slot="log"] .log-message')!.textContent).toBe(hostile);
    expect(doc.querySelector('[data-stream="stdout"] [data-stream-text]')!.textContent).toBe(`${hostile}\n`);
    expect(doc.querySelector('[data-slot="diagnostics"] [data-field="message"]')!.textContent).toBe(hostile);
    expect(JSON.parse(doc.querySelector('[data-slot="input"]')!.textContent!).message).toBe(hostile);
    expect(doc.querySelector('[data-slot="steps"] [data-field="title"]')!.textContent).toBe(`Echo ${hostile}`);
    // A long path sits in a cell that wraps anywhere rather than widening the page.
    expect(doc.querySelector('[data-slot="diagnostics"] [data-field="location"]')!.className).toContain("wrap-anywhere");
  });

  test("secrets are shown as stored: redacted", async () => {
    const id = await server.start("team.deploy", { target: "staging", token: "hunter2-do-not-show" });
    await server.completed(id);
    const { html } = await server.page(`/cockpit/executions/${id}`);
    expect(html).not.toContain("hunter2");
    expect(JSON.parse(parseHtml(html).querySelector('[data-slot="input"]')!.textContent!).token).toBe("[redacted]");
  });

  test("the executions page counts per state, filters by state and capability, and pages with the cursor", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 51; i++) ids.push(await server.start("executions.demonstrate", { steps: 0, delay_ms: 0 }));
    const echo = await server.start("team.echo", { message: "filtered" });
    await Promise.all([...ids, echo].map((id) => server.completed(id)));

    const all = parseHtml((await server.page("/cockpit/executions")).html);
    const counts = (await (await fetch(`${server.url}/api/v1/executions?limit=1`)).json()) as any;
    expect(Number(textOf(all, '[data-count="succeeded"]'))).toBe(counts.counts.succeeded);
    expect(all.querySelectorAll("[data-execution-row]").length).toBe(50);
    const next = all.querySelector("a[data-next-page]")!.getAttribute("href")!;
    expect(next).toMatch(/^\/cockpit\/executions\?cursor=/);
    const second = parseHtml((await server.page(next)).html);
    const firstIds = new Set([...all.querySelectorAll("[data-execution-row]")].map((r) => r.getAttribute("data-execution-row")));
    const secondIds = [...second.querySelectorAll("[data-execution-row]")].map((r) => r.getAttribute("data-execution-row"));
    expect(secondIds.length).toBeGreaterThan(0);
    expect(secondIds.some((id) => firstIds.has(id))).toBe(false);

    const byCapability = parseHtml((await server.page("/cockpit/executions?capability=team.echo")).html);
    const rows = [...byCapability.querySelectorAll("[data-execution-row]")];
    expect(rows.map((r) => r.getAttribute("data-execution-row"))).toContain(echo);
    expect(rows.every((r) => r.querySelector('[data-cell="capability"]')!.textContent === "team.echo")).toBe(true);
    expect(byCapability.querySelector('#filter-capability option[selected]')?.getAttribute("value")).toBe("team.echo");

    const failed = parseHtml((await server.page("/cockpit/executions?state=failed&capability=executions.demonstrate")).html);
    expect([...failed.querySelectorAll("[data-execution-row]")].every((r) => r.getAttribute("data-state") === "failed")).toBe(true);
    expect(failed.querySelector('[data-counts] a[aria-current="true"]')?.textContent).toContain("Failed");
  });

  test("an execution page and the overview answer the sections they are asked for alone (an execution's large input not among them): what their scripts re-read", async () => {
    const id = await server.start("team.echo", { message: "m".repeat(300_000) });
    await server.completed(id);
    const whole = await server.page(`/cockpit/executions/${id}`);
    const part = await server.page(`/cockpit/executions/${id}?section=timeline&section=steps`);
    expect(part.status).toBe(200);
    const doc = parseHtml(part.html);
    expect([...doc.querySelectorAll("[data-section]")].map((element) => element.getAttribute("data-section"))).toEqual(["timeline", "steps"]);
    expect(doc.querySelector('[data-section="steps"] tr[data-step-id="echo"]')).not.toBeNull();
    // The whole page holds the input (its first 256 KiB); the sections hold neither it nor the log.
    expect(whole.html.length).toBeGreaterThan(250_000);
    expect(part.html.length).toBeLessThan(10_000);
    expect(part.headers.get("content-security-policy")).toContain("default-src");
    const wrong = await server.page(`/cockpit/executions/${id}?section=timeline&section=input`);
    expect(wrong.status).toBe(400);
    expect(textOf(parseHtml(wrong.html), "main")).toContain('section must be one of output, failure, reconciliation, timeline, steps, diagnostics, artifacts, log-dropped, log-lines, got "input".');
    // The overview too: the counts its script re-reads at each change of state, alone.
    const counts = await server.page("/cockpit?section=counts");
    const countsDoc = parseHtml(counts.html);
    expect([...countsDoc.querySelectorAll("[data-section]")].map((element) => element.getAttribute("data-section"))).toEqual(["counts"]);
    expect(Number(textOf(countsDoc, '[data-count="succeeded"]'))).toBeGreaterThanOrEqual(1);
    expect((await server.page("/cockpit?section=chart")).status).toBe(400);
  });

  test("the executions list answers its counts and its rows alone when asked, filtered as the page is: what live-list.js re-reads", async () => {
    const ids = [await server.start("team.echo", { message: "one" }), await server.start("team.echo", { message: "two" })];
    for (const id of ids) await server.completed(id);
    const whole = await server.page("/cockpit/executions?capability=team.echo");
    const counts = await server.page("/cockpit/executions?capability=team.echo&section=counts");
    expect(counts.status).toBe(200);
    const countsDoc = parseHtml(counts.html);
    expect([...countsDoc.querySelectorAll("[data-section]")].map((element) => element.getAttribute("data-section"))).toEqual(["counts"]);
    expect(Number(textOf(countsDoc, '[data-count="succeeded"]'))).toBeGreaterThanOrEqual(2);
    // The counts alone: no rows, no filter form, no layout around them.
    expect(countsDoc.querySelector("tr[data-execution-row]")).toBeNull();
    expect(countsDoc.querySelector("form")).toBeNull();
    expect(counts.html.length * 3).toBeLessThan(whole.html.length);
    expect(counts.headers.get("content-security-policy")).toContain("default-src");
    // The rows alone, under the same filter, as the whole page shows them.
    const list = parseHtml((await server.page("/cockpit/executions?capability=team.echo&section=counts&section=list")).html);
    expect([...list.querySelectorAll("[data-section]")].map((element) => element.getAttribute("data-section"))).toEqual(["counts", "list"]);
    const rowsOf = (doc: ReturnType<typeof parseHtml>) => [...doc.querySelectorAll("tr[data-execution-row]")].map((row) => row.getAttribute("data-execution-row"));
    expect(rowsOf(list)).toEqual(rowsOf(parseHtml(whole.html)));
    for (const id of ids) expect(rowsOf(list)).toContain(id);
    const wrong = await server.page("/cockpit/executions?section=list&section=filters");
    expect(wrong.status).toBe(400);
    expect(textOf(parseHtml(wrong.html), "main")).toContain('section must be one of counts, list, got "filters".');
  });

  test("unknown ids answer a 404 page, malformed ones a 400 page, and both carry the CSP", async () => {
    const cases: Array<[string, number, string]> = [
      ["/cockpit/executions/x-20260101T000000Z-00000000", 404, "No such execution"],
      ["/cockpit/executions/not-an-id", 400, "Not an execution id"],
      ["/cockpit/capabilities/no.such", 404, "No such capability"],
      ["/cockpit/capabilities/Not..An..Id", 400, "Not a capability id"],
      ["/cockpit/executions?state=finished", 400, "Unknown state"],
      ["/cockpit/executions?cursor=zzz", 400, "Unknown cursor"],
      // A misspelt or repeated filter answered the whole list, as if filtered (cockpit tester).
      ["/cockpit/executions?State=failed", 400, "Unknown query parameter"],
      ["/cockpit/executions?capabilty=team.echo", 400, "Unknown query parameter"],
      ["/cockpit/executions?state=failed&state=succeeded", 400, "Repeated query parameter"],
      ["/cockpit/executions/x-20260101T000000Z-00000000?log_lvl=warn", 400, "Unknown query parameter"],
      ["/cockpit?sections=counts", 400, "Unknown query parameter"],
      ["/cockpit/capabilities?query=x", 400, "Unknown query parameter"],
      // Not percent-encoded UTF-8: read changed, it became a filter choice nobody made (MCP and cockpit tester, session 41).
      ["/cockpit/executions?capability=%E0%A4%A", 400, "Malformed query"],
      ["/cockpit/executions?state=%FF", 400, "Malformed query"],
      ["/cockpit/nothing/here", 404, "Not found"],
    ];
    for (const [path, status, title] of cases) {
      const page = await server.page(path);
      expect([path, page.status]).toEqual([path, status]);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(textOf(parseHtml(page.html), "h1")).toBe(title);
    }
    const misspelt = parseHtml((await server.page("/cockpit/executions?capabilty=team.echo")).html);
    expect(textOf(misspelt, "main")).toContain('This page reads no parameter "capabilty". This page takes "state", "capability", "cursor", "section".');
    expect(textOf(misspelt, "main")).toContain('Did you mean "capability"?');
    const slash = await server.page("/cockpit/capabilities/");
    expect(slash.status).toBe(301);
    expect(slash.headers.get("location")).toBe("/cockpit/capabilities");
    for (const path of ["/cockpit/capabilities/", "/cockpit/"]) {
      const head = await fetch(`${server.url}${path}`, { method: "HEAD", redirect: "manual" });
      expect({ path, status: head.status, location: head.headers.get("location") }).toEqual({ path, status: 301, location: path.replace(/\/$/, "") });
    }
  });

  test("docket serve's default mounts include the cockpit", async () => {
    const { defaultMounts } = await import("../../runtime/server/default-mounts.ts");
    const { startServer } = await import("../../runtime/server/serve.ts");
    const { resolveLimits } = await import("../../runtime/execution/limits.ts");
    const { tempCheckout } = await import("../server/_support/servers.ts");
    const { rmSync } = await import("node:fs");
    const root = tempCheckout();
    const served = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: () => undefined, mounts: defaultMounts });
    try {
      const response = await fetch(`${served.url}/cockpit`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
      expect(await response.text()).toContain("<h1>Overview</h1>");
    } finally {
      await served.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

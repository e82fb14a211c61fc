import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { COCKPIT_CSP } from "../../cockpit/security-headers.ts";
import { ASSETS, assetPath, type AssetName } from "../../cockpit/assets.ts";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { closeParsed, parseHtml, textOf } from "./_support/html.ts";

let server: CockpitServer;

// A write whose every run adds a line to a file of the checkout: how many times it ran.
const TALLY = `import { capability, sensitive } from "docket";
import * as v from "valibot";
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "team.tally", title: "Tally", description: "Adds a line to .tally each run.", effect: "write",
  input: v.object({ token: sensitive(v.string()), fail: v.optional(v.boolean(), false) }),
  output: v.object({ runs: v.number() }),
  errors: ["asked_to_fail"],
  handler(input, ctx) {
    appendFileSync(join(ctx.root, ".tally"), "run\\n");
    const runs = readFileSync(join(ctx.root, ".tally"), "utf8").split("\\n").length - 1;
    if (input.fail) throw new (require("docket").CapabilityError)("asked_to_fail", "failed on run " + runs);
    return { runs };
  },
});
`;

// A read with an optional secret: Run again of a run given one must not send it without, unasked.
const NOTIFY = `import { capability, sensitive } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.notify", title: "Notify", description: "Says whether it was given a token.", effect: "read",
  input: v.object({ channel: v.string(), token: v.optional(sensitive(v.string())) }),
  output: v.object({ channel: v.string(), with_token: v.boolean() }),
  handler: (input) => ({ channel: input.channel, with_token: input.token !== undefined }),
});
`;

// A read answering rows: a direct Run shows them as the execution page would, a table.
const HOSTS = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.hosts", title: "Hosts", description: "Lists hosts.", effect: "read",
  input: v.object({ many: v.optional(v.number(), 0) }),
  output: v.array(v.object({ host: v.string(), load: v.number() })),
  handler: (input) => (input.many > 0 ? Array.from({ length: input.many }, (_, i) => ({ host: "h" + i + ".example".repeat(20), load: i })) : [{ host: "b.example", load: 10 }, { host: "a.example", load: 2 }]),
});
`;

// A write whose output, all "<" (each drawn as "&lt;"), makes a page past the 16 MiB of pages kept for a reload.
const HUGE = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "team.huge", title: "Huge", description: "Answers megabytes.", effect: "write",
  input: v.object({}),
  output: v.string(),
  handler(_input, ctx) {
    appendFileSync(join(ctx.root, ".huge"), "run\\n");
    return "<".repeat(3_000_000);
  },
});
`;

/** A whole object that was a secret once (its schema no longer says so): Run again asks for it as a group. */
const VAULT = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.vault", title: "Vault", description: "Gives its input back.", effect: "read",
  input: v.object({ name: v.string(), creds: v.object({ user: v.optional(v.string()), key: v.optional(v.string()) }) }),
  output: v.any(),
  handler(input) {
    return input;
  },
});
`;

beforeAll(async () => {
  server = await startCockpitServer({}, { "team.tally.ts": TALLY, "team.notify.ts": NOTIFY, "team.hosts.ts": HOSTS, "team.huge.ts": HUGE, "team.vault.ts": VAULT });
});

afterAll(async () => {
  await closeParsed();
  await server.stop();
});

const deployForm = (extra: Record<string, string | string[]> = {}) => ({ mode: "call", confirmed: ["", "1"], "input.target": '"production"', "input.token": "s3cret-value", ...extra });

describe("cockpit forms", () => {
  test("Run again of an execution given an optional secret asks for it: the box is required, and a form sent without it runs nothing (cockpit tester, session 43)", async () => {
    const first = await server.start("team.notify", { channel: "ops", token: "s3cret-value" });
    await server.completed(first);
    const again = parseHtml((await server.page(`/cockpit/capabilities/team.notify?again=${first}`)).html);
    expect(again.querySelector('input[name="input.token"]')!.hasAttribute("required")).toBe(true);
    expect(again.querySelector('input[type="hidden"][name="type_again"]')!.getAttribute("value")).toBe("input.token");
    const without = await server.post("/cockpit/capabilities/team.notify", { mode: "call", "input.channel": "ops", "input.token": "", type_again: "input.token" });
    expect(without.status).toBe(400);
    const refused = parseHtml(await without.text());
    expect(textOf(refused, ".field-error")).toContain("Type it again: the execution this runs again was given one.");
    expect(refused.querySelector('input[name="input.token"]')!.hasAttribute("required")).toBe(true);
    // Typed again, it runs with it; the form afresh (no type_again) runs without.
    const typed = await server.post("/cockpit/capabilities/team.notify", { mode: "call", "input.channel": "ops", "input.token": "s3cret-value", type_again: "input.token" });
    expect([200, 303]).toContain(typed.status);
    const afresh = parseHtml(await (await server.post("/cockpit/capabilities/team.notify", { mode: "call", "input.channel": "ops", "input.token": "" })).text());
    expect(afresh.querySelector('[data-slot="result"]')?.textContent ?? "").toContain('"with_token": false');
    // A plain page (no Run again) asks nothing more of an optional secret.
    expect(parseHtml((await server.page("/cockpit/capabilities/team.notify")).html).querySelector('input[name="input.token"]')!.hasAttribute("required")).toBe(false);
  });

  test("a group asked for again (a whole object that was the secret) runs nothing until something in it is typed, then runs with what was typed (checking tester, session 50)", async () => {
    const without = await server.post("/cockpit/capabilities/team.vault", { mode: "call", "input.name": "n", type_again: "input.creds" });
    expect(without.status).toBe(400);
    expect(textOf(parseHtml(await without.text()), "[data-slot=\"problem\"], .notice-error, .problem") ?? "").toContain("type it again");
    const typed = await server.post("/cockpit/capabilities/team.vault", { mode: "call", "input.name": "n", "input.creds.user": "ada", type_again: "input.creds" });
    expect(typed.status).toBe(200);
    expect(textOf(parseHtml(await typed.text()), '[data-slot="result"]')).toContain('"user": "ada"');
  });

  test("a direct Run's output is shown by its shape, as on an execution's page: rows are a sortable table, the JSON one click away (cockpit tester, session 43)", async () => {
    const response = await server.post("/cockpit/capabilities/team.hosts", { mode: "call" });
    expect(response.status).toBe(200);
    const doc = parseHtml(await response.text());
    const table = doc.querySelector('[data-section="result"] table[data-sortable]')!;
    expect(table).not.toBeNull();
    expect([...table.querySelectorAll("thead th")].map((th) => th.textContent)).toEqual(["host", "load"]);
    expect([...table.querySelectorAll("tbody td")].map((td) => td.textContent)).toEqual(["b.example", "10", "a.example", "2"]);
    expect(JSON.parse(textOf(doc, '[data-slot="result"]')!)).toEqual([{ host: "b.example", load: 10 }, { host: "a.example", load: 2 }]);
    expect(doc.querySelector(`script[src="${assetPath("output-table.js")}"]`)).not.toBeNull();
  });

  test("a direct Run whose output is too large for the page says where it is whole: nowhere kept, so the API call or an execution, not links it has not (checking tester, session 44)", async () => {
    const response = await server.post("/cockpit/capabilities/team.hosts", { mode: "call", "input.many": "3000" });
    const doc = parseHtml(await response.text());
    const caption = doc.querySelector('[data-section="result"] .output-table p')!.textContent!.replace(/\s+/g, " ");
    expect(caption).toContain("a direct call's output is not kept: call POST /api/v1/team/hosts to read it whole");
    expect(caption).not.toContain("links on this page");
    expect(textOf(doc, '[data-slot="result"]')).toContain("a direct call's output is not kept");
  });

  test("Run as execution starts the capability as the cockpit and answers 303 to the execution's page", async () => {
    const response = await server.post("/cockpit/capabilities/executions.demonstrate", { mode: "start", "input.steps": "1", "input.delay_ms": "0", "input.events": "0" });
    expect(response.status).toBe(303);
    const location = response.headers.get("location")!;
    expect(location).toMatch(/^\/cockpit\/executions\/x-\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    const id = location.split("/").pop()!;
    const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()) as any;
    expect(snapshot.actor).toEqual({ kind: "cockpit" });
    expect(snapshot.input).toEqual({ steps: 1, delay_ms: 0, events: 0 });
    await server.completed(id);
  });

  test("Run calls the capability directly and shows its output on the page; the secret is not written back", async () => {
    const response = await server.post("/cockpit/capabilities/team.deploy", deployForm({ "input.tags": "a\n\n b \nc", "input.ports": "80\n443", "input.replicas": "3", "input.options.region": "eu" }));
    expect(response.status).toBe(200);
    const html = await response.text();
    const doc = parseHtml(html);
    const output = JSON.parse(textOf(doc, '[data-slot="result"]')!);
    expect(output).toEqual({ deployed: "production", token_length: 12, replicas: 3, tags: ["a", "b", "c"] });
    expect(html).not.toContain("s3cret-value");
    // The form comes back as submitted, for the next run.
    expect(doc.querySelector('[name="input.replicas"]')?.getAttribute("value")).toBe("3");
    expect(doc.querySelector('[name="input.target"] option[selected]')?.textContent).toBe("production");
    expect(doc.querySelector('[name="input.dry_run"]')?.hasAttribute("checked")).toBe(false);
  });

  test("Run answers 303 to a page of its result: reading it again (a reload, Back) runs nothing again and holds no secret", async () => {
    for (const fail of [false, true]) {
      const posted = await fetch(`${server.url}/cockpit/capabilities/team.tally`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: server.url },
        body: new URLSearchParams({ mode: "call", confirmed: "1", "input.token": "tally-secret-1", ...(fail ? { "input.fail": "true" } : {}) }),
      });
      expect(posted.status).toBe(303);
      const location = posted.headers.get("location")!;
      expect(location).toMatch(/^\/cockpit\/capabilities\/team\.tally\?result=[0-9a-f-]{36}$/);
      const pages = [];
      for (let i = 0; i < 3; i++) {
        const page = await server.page(location);
        pages.push(page.html);
        expect(page.status).toBe(fail ? 422 : 200);
        expect(page.html).not.toContain("tally-secret-1");
      }
      expect(new Set(pages).size).toBe(1);
      // Its token read at another capability's address shows nothing of it (tester H).
      const elsewhere = await server.page(location.replace("team.tally", "team.echo"));
      expect(elsewhere.html).not.toContain("Tally");
      expect(textOf(parseHtml(elsewhere.html), '[data-slot="again"]')).toContain("no longer kept");
      // Run once each: the first Run's one line, then the failed Run's second.
      if (fail) expect(pages[0]).toContain("failed on run 2");
      else expect(JSON.parse(textOf(parseHtml(pages[0]!), '[data-slot="result"]')!)).toEqual({ runs: 1 });
    }
    // A result no longer kept (or never): the page says so, and runs nothing.
    const gone = await server.page("/cockpit/capabilities/team.tally?result=00000000-0000-4000-8000-000000000000");
    expect(gone.status).toBe(200);
    expect(textOf(parseHtml(gone.html), '[data-slot="again"]')).toContain("The result of that Run is no longer kept");
  });

  test("a Run whose output is megabytes answers 303 all the same, to a bounded page that says where the rest is: a reload runs nothing again (cockpit tester, session 48: 200 with 50 MB, and a reload ran the write again)", async () => {
    const posted = await fetch(`${server.url}/cockpit/capabilities/team.huge`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: server.url },
      body: new URLSearchParams({ mode: "call", confirmed: "1" }),
    });
    expect(posted.status).toBe(303);
    const location = posted.headers.get("location")!;
    for (let i = 0; i < 2; i++) {
      const page = await server.page(location);
      expect(page.status).toBe(200);
      // The page shows what it shows of an output's fields and says where the rest is (output-shape.ts SHAPED_CHARS).
      expect(page.html.length).toBeLessThan(6_000_000);
      expect(page.html.includes("more characters not shown here")).toBe(true);
      expect(page.html.includes("call POST /api/v1/team/huge to read it whole")).toBe(true);
    }
    expect(readFileSync(join(server.root, ".huge"), "utf8")).toBe("run\n");
  });

  test("a write capability is not run until it is confirmed", async () => {
    const before = (await (await fetch(`${server.url}/api/v1/executions?capability=team.deploy&limit=1`)).json()) as any;
    const response = await server.post("/cockpit/capabilities/team.deploy", deployForm({ mode: "start", confirmed: "" }));
    expect(response.status).toBe(400);
    const doc = parseHtml(await response.text());
    expect(textOf(doc, '[data-slot="problem"]')).toContain("team.deploy may change something (effect: write): confirm before it runs.");
    const after = (await (await fetch(`${server.url}/api/v1/executions?capability=team.deploy&limit=1`)).json()) as any;
    expect(after.items.map((x: any) => x.id)).toEqual(before.items.map((x: any) => x.id));
  });

  test("bad form input is shown as a clear error next to its field, never a 500", async () => {
    const notANumber = await server.post("/cockpit/capabilities/team.deploy", deployForm({ "input.replicas": "ten", "input.ports": "80\nhttp" }));
    expect(notANumber.status).toBe(400);
    const doc = parseHtml(await notANumber.text());
    expect(textOf(doc, '[data-field="replicas"] .field-error')).toBe('✕ replicas must be a number, got "ten".');
    expect(doc.querySelector('[name="input.replicas"]')?.getAttribute("aria-invalid")).toBe("true");
    expect(textOf(doc, '[data-field="ports"] .field-error')).toBe('✕ ports (line 2) must be a number, got "http".');

    const outOfRange = await server.post("/cockpit/capabilities/team.deploy", deployForm({ "input.replicas": "11" }));
    expect(outOfRange.status).toBe(400);
    const failure = parseHtml(await outOfRange.text());
    expect(textOf(failure, '[data-failure-field="error_code"]')).toBe("invalid_input");
    expect(textOf(failure, '[data-failure-field="message"]')).toContain("replicas");
    // Refused by the schema rather than by the form, it is marked at its field all the same.
    expect(textOf(failure, '[data-field="replicas"] .field-error')).toBe("✕ replicas: Invalid value: Expected <=10 but received 11");
    expect(failure.querySelector('[name="input.replicas"]')?.getAttribute("aria-invalid")).toBe("true");
    // And so when it runs as an execution, which then never starts.
    const startOutOfRange = await server.post("/cockpit/capabilities/team.deploy", deployForm({ mode: "start", "input.replicas": "0" }));
    expect(startOutOfRange.status).toBe(400);
    expect(textOf(parseHtml(await startOutOfRange.text()), '[data-field="replicas"] .field-error')).toBe("✕ replicas: Invalid value: Expected >=1 but received 0");

    const cases: Array<[Record<string, string | string[]>, number, string]> = [
      [deployForm({ "input.target": "" }), 400, "target is required."],
      [deployForm({ "input.target": '"moon"' }), 400, 'target must be one of "staging", "production", got "\\"moon\\"".'],
      [deployForm({ raw_json: "{not json" }), 400, "The raw JSON input is not valid JSON"],
      [deployForm({ mode: "launch" }), 400, 'Choose "Run" or "Run as execution" (one of them).'],
      // A field or the mode sent twice (a hand-made post): refused, never one of its values silently taken (contract tester, session 39).
      [deployForm({ mode: ["call", "start"] }), 400, 'Choose "Run" or "Run as execution" (one of them).'],
      [deployForm({ "input.target": ['"staging"', '"production"'] }), 400, "target was sent 2 times; it takes one value."],
    ];
    for (const [form, status, message] of cases) {
      const response = await server.post("/cockpit/capabilities/team.deploy", form);
      expect(response.status).toBe(status);
      expect(textOf(parseHtml(await response.text()), '[data-slot="problem"]')).toContain(message);
    }
    const raw = await server.post("/cockpit/capabilities/team.deploy", deployForm({ raw_json: '{"target":"staging","token":"x"}' }));
    expect(raw.status).toBe(200);
    expect(JSON.parse(textOf(parseHtml(await raw.text()), '[data-slot="result"]')!).deployed).toBe("staging");
    // A secret sent in the wrong place — the API's body shape, a misspelt field, an array, a bare
    // string — is a secret all the same: the box is not filled again (containment tester, session 42).
    for (const wrong of ['{"input":{"target":"staging","token":"ghp_wrongplace1"}}', '{"target":"staging","tokn":"ghp_misspelt22"}', '[{"token":"ghp_inarray333"}]', '"ghp_barestring4"']) {
      const refused = await server.post("/cockpit/capabilities/team.deploy", deployForm({ raw_json: wrong }));
      expect(refused.status).toBe(400);
      const html = await refused.text();
      expect(html).not.toContain("ghp_");
      expect(textOf(parseHtml(html), "#raw-json-help")).toContain("the JSON you sent is not filled in again");
    }
    // JSON of the schema's shape that gives no secret is filled again, to be corrected.
    const moon = parseHtml(await (await server.post("/cockpit/capabilities/team.deploy", deployForm({ raw_json: '{"target":"moon"}' }))).text());
    expect(moon.querySelector("#raw-json")?.textContent).toBe('{"target":"moon"}');

    const notAForm = await fetch(`${server.url}/cockpit/capabilities/team.deploy`, { method: "POST", headers: { "content-type": "application/json", origin: server.url }, body: "{}" });
    expect(notAForm.status).toBe(415);
    expect(await notAForm.text()).toContain("application/x-www-form-urlencoded");
    expect((await server.post("/cockpit/capabilities/no.such", { mode: "call" })).status).toBe(404);
  });

  test("a direct call that fails shows the failure descriptor on the capability page", async () => {
    const response = await server.post("/cockpit/capabilities/executions.demonstrate", { mode: "call", "input.steps": "0", "input.delay_ms": "0", "input.fail": "true" });
    expect(response.status).toBe(422);
    const doc = parseHtml(await response.text());
    expect(textOf(doc, '[data-failure-field="error_code"]')).toBe("demonstration_failed");
    expect(textOf(doc, '[data-failure-field="suggestion"]')).toBe("Run it again without fail: true.");
  });

  test("Cancel from the page: a form post returns to the page with a notice; a script gets the receipt", async () => {
    const first = await server.start("executions.demonstrate", { steps: 50, delay_ms: 60_000 });
    const posted = await server.post(`/cockpit/executions/${first}/cancel`, {});
    expect(posted.status).toBe(303);
    expect(posted.headers.get("location")).toMatch(new RegExp(`^/cockpit/executions/${first}\\?notice=[0-9a-f]{16}$`));
    await server.completed(first);
    const page = parseHtml((await server.page(posted.headers.get("location")!)).html);
    expect(textOf(page, '[data-slot="notice"]')).toContain("Cancel requested");

    const second = await server.start("executions.demonstrate", { steps: 50, delay_ms: 60_000 });
    const receipt = await server.post(`/cockpit/executions/${second}/cancel`, {}, { accept: "application/json" });
    expect(receipt.status).toBe(200);
    expect(await receipt.json()).toMatchObject({ id: second, requested: true, cancellable: true });
    await server.completed(second);
    const again = await server.post(`/cockpit/executions/${second}/cancel`, {});
    expect(textOf(parseHtml((await server.page(again.headers.get("location")!)).html), '[data-slot="notice"]')).toContain("Cancel was not requested");
    // The notice is this server's, for that execution: another's page, or a key named in a link, shows none.
    const token = new URL(again.headers.get("location")!, server.url).searchParams.get("notice");
    expect(textOf(parseHtml((await server.page(`/cockpit/executions/${first}?notice=${token}`)).html), '[data-slot="notice"]')?.trim() ?? "").toBe("");

    expect((await server.post("/cockpit/executions/x-20260101T000000Z-00000000/cancel", {})).status).toBe(404);
    expect((await server.post("/cockpit/executions/nope/cancel", {})).status).toBe(400);
  });

  test("a form post from another origin is refused before it reaches the cockpit", async () => {
    const response = await server.post("/cockpit/capabilities/executions.demonstrate", { mode: "start" }, { origin: "http://evil.example" });
    expect(response.status).toBe(403);
  });
});

describe("cockpit responses", () => {
  test("every cockpit response carries the Content-Security-Policy", async () => {
    const page = await server.page("/cockpit");
    expect(page.headers.get("content-security-policy")).toBe(COCKPIT_CSP);
    for (const directive of ["default-src 'self'", "script-src 'self'", "connect-src 'self'", "style-src 'self'", "img-src 'self' data:", "frame-ancestors 'none'"]) {
      expect(COCKPIT_CSP).toContain(directive);
    }
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("cache-control")).toBe("no-store");
    // No inline script or style anywhere: the CSP would block them.
    expect(page.html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(page.html).not.toMatch(/\sstyle=/);
    expect(page.html).not.toMatch(/\son[a-z]+=/);
  });

  test("assets are served from the binary with their content type, an ETag and a year's caching when versioned", async () => {
    const types: Record<AssetName, string> = {
      "cockpit.css": "text/css",
      "icon.svg": "image/svg+xml",
      "socket.js": "text/javascript",
      "format.js": "text/javascript",
      "execution.js": "text/javascript",
      "live-list.js": "text/javascript",
      "catalog-watch.js": "text/javascript",
      "run-form.js": "text/javascript",
      "anser.js": "text/javascript",
      "ansi.js": "text/javascript",
      "log-filter.js": "text/javascript",
      "output-table.js": "text/javascript",
      "refresh.js": "text/javascript",
    };
    for (const name of Object.keys(ASSETS) as AssetName[]) {
      const response = await fetch(server.url + assetPath(name));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain(types[name]);
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(response.headers.get("content-security-policy")).toBe(COCKPIT_CSP);
      expect(await response.text()).toBe(ASSETS[name].body);
      const etag = response.headers.get("etag")!;
      const unversioned = await fetch(`${server.url}/cockpit/assets/${name}`, { headers: { "if-none-match": etag } });
      expect(unversioned.status).toBe(304);
      expect(unversioned.headers.get("cache-control")).toBe("no-cache");
    }
    expect((await fetch(`${server.url}/cockpit/assets/nope.js`)).status).toBe(404);
    // Nothing is fetched from elsewhere: every URL in the assets and pages is relative to this origin.
    const html = (await server.page("/cockpit/capabilities/team.deploy")).html;
    for (const text of [html, ...Object.values(ASSETS).map((a) => a.body)]) expect(text).not.toMatch(/(?:src|href)=["']?(?:https?:)?\/\//);
    expect(ASSETS["cockpit.css"].body).not.toContain("@import");
    expect(ASSETS["cockpit.css"].body).not.toContain("url(");
  });

  test("browser code writes no path: every URL it uses comes from the markup", () => {
    for (const name of ["socket.js", "format.js", "execution.js", "live-list.js", "run-form.js", "ansi.js", "log-filter.js", "output-table.js", "refresh.js"] as const) {
      const code = ASSETS[name].body.replace(/^\s*\/\/.*$/gm, "");
      expect(code).not.toMatch(/["'`]\/(?:events|api|cockpit)/);
      expect(code).not.toContain("innerHTML");
    }
    expect(ASSETS["socket.js"].body).toContain("new env.WebSocket(");
    for (const name of ["format.js", "execution.js", "live-list.js", "run-form.js", "ansi.js", "log-filter.js", "output-table.js", "refresh.js", "anser.js"] as const) expect(ASSETS[name].body).not.toMatch(/WebSocket\(/);
  });
});

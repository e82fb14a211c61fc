import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DiagnosticsTable } from "../../cockpit/components/diagnostics-table.tsx";
import { StepTimeline } from "../../cockpit/components/step-timeline.tsx";
import { StepsTable } from "../../cockpit/components/steps-table.tsx";
import type { StepSnapshot } from "../../runtime/execution/snapshot.ts";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { loadPage } from "./_support/dom.ts";
import { event, executionHtml, ID, liveExecutionPage, runningSnapshot } from "./_support/fixtures.ts";

// The bidirectional embeddings, overrides and isolates make a text read in another order than it
// is written ("\u202eexe.pdf" reads "fdp.exe"): handler text loses them before it is stored, and
// every other string a handler gives loses them where the cockpit shows it (docs/cockpit.md).
const BIDI = /[\u202a-\u202e\u2066-\u2069]/;
/** The page without the attributes that identify a step or a file (never shown): what a reader sees. */
const shown = (html: string) => html.replace(/ data-(?:step-id|artifact)="[^"]*"/g, "");
const RLO = "\u202e";
const ISOLATE = "\u2067";

/** Every bidi control a handler can put in what the execution page shows. */
const SNEAKY = `import { capability, CapabilityError } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.sneaky", title: "Sneaky", description: "Hides bidi controls in everything it gives.", effect: "read",
  input: v.object({ fail: v.boolean(), direct: v.optional(v.boolean()), label: v.optional(v.string(), "a${RLO}RTL\u009b32m") }),
  output: v.any(),
  async handler(input, ctx) {
    ctx.progress.step("s${RLO}tep", "Title ${RLO}gnp.exe");
    ctx.progress.diagnostic({ severity: "warning", message: "diag ${RLO}txt.exe", code: "c${ISOLATE}ode", file: "fi${RLO}le.ts", line: 1 });
    ctx.progress.stepDone("s${RLO}tep", true, "done ${RLO}here");
    // A direct call has no artifact folder.
    if (!input.direct) await ctx.artifacts.write("report${RLO}fdp.exe", "x");
    if (input.fail) throw new CapabilityError("sneaky_failure", "failed ${RLO}here", { context: { "ke${RLO}y": "val${ISOLATE}ue", nested: ["in${RLO}side"] }, suggestion: "try ${RLO}again" });
    return {
      short: "sca${RLO}lar",
      long: "a long text that reads in another order from here ${RLO}on, which no one should see in the cockpit, line\\nand more",
      rows: [{ "col${RLO}umn": "ce${ISOLATE}ll", size: 1 }],
      "fi${RLO}eld": 3,
      deep: { list: [1, "x${RLO}y"] },
    };
  },
});
`;

let server: CockpitServer;

describe("the cockpit shows no bidi control a handler gave", () => {
  beforeAll(async () => {
    server = await startCockpitServer({}, { "team.sneaky.ts": SNEAKY });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test("the execution page of a succeeded execution: its output by shape and as JSON, steps, diagnostics, artifact names", async () => {
    const id = await server.start("team.sneaky", { fail: false });
    await server.completed(id);
    const { status, html } = await server.page(`/cockpit/executions/${id}`);
    expect(status).toBe(200);
    expect(shown(html)).not.toMatch(BIDI);
    // Text loses them; JSON says them as escapes, so it is still the exact value.
    expect(html).toContain("scalar");
    expect(html).toContain("from here on, which");
    // A column's key is its name: one holding a control is headed by its key quoted with the control escaped, so it is not taken for another (checking tester, session 50).
    expect(html).toContain(">&quot;col\\u202eumn&quot;<");
    expect(html).toContain(">cell<");
    expect(html).toContain(">field<");
    expect(html).toContain("&quot;sca\\u202elar&quot;");
    expect(html).toContain("&quot;x\\u202ey&quot;");
    expect(html).toContain("Title gnp.exe");
    expect(html).toContain("done here");
    expect(html).toContain("diag txt.exe");
    expect(html).toContain("file.ts:1");
    expect(html).toContain(">code<");
    expect(html).toContain(">reportfdp.exe<");
    expect(html).toContain('download="reportfdp.exe"');
  });

  test("the execution page of a failed execution: every failure field, the context too", async () => {
    const id = await server.start("team.sneaky", { fail: true });
    await server.completed(id);
    const { html } = await server.page(`/cockpit/executions/${id}`);
    expect(shown(html)).not.toMatch(BIDI);
    expect(html).toContain("failed here");
    expect(html).toContain("try again");
    expect(html).toContain("&quot;ke\\u202ey&quot;: &quot;val\\u2067ue&quot;");
    expect(html).toContain("&quot;in\\u202eside&quot;");
  });

  test("the capability page: a default shown in a field's help is JSON with its bidi control as an escape (tester, session 33)", async () => {
    const { html } = await server.page("/cockpit/capabilities/team.sneaky");
    // A C1 control (U+009B opens a terminal escape of its own) is written as its escape too.
    expect(html).toContain("Default: &quot;a\\u202eRTL\\u009b32m&quot;.");
    expect(shown(html)).not.toMatch(BIDI);
    expect(html).not.toContain("\u009b");
  });

  test("a direct call's result on the capability page: output and failure", async () => {
    for (const fail of [false, true]) {
      const response = await server.post("/cockpit/capabilities/team.sneaky", { mode: "call", "input.direct": "true", ...(fail ? { "input.fail": "true" } : {}) });
      const html = await response.text();
      expect(html).toContain(fail ? "failed here" : "&quot;sca\\u202elar&quot;");
      expect(shown(html)).not.toMatch(BIDI);
    }
  });
});

describe("the cockpit's components and scripts show no bidi control a snapshot or an event holds", () => {
  // A snapshot stored before docket removed them from handler text, or a `docket run` that sent them.
  const step: StepSnapshot = { id: `s${RLO}tep`, title: `Title ${RLO}gnp.exe`, state: "succeeded", started_at: "2026-09-08T01:02:03.000Z", finished_at: "2026-09-08T01:02:04.000Z", message: `done ${RLO}here` };

  test("the steps table, the timeline and the diagnostics table", () => {
    const steps = String(StepsTable({ steps: [step], endedAt: null, kept: { limit: 10, dropped: 0, droppedFailed: 0 } }));
    const timeline = String(StepTimeline({ steps: [step], execution: { started_at: step.started_at, finished_at: step.finished_at }, now: Date.parse(step.finished_at!) }));
    const diagnostics = String(DiagnosticsTable({ diagnostics: [{ severity: "error", message: `diag ${RLO}txt.exe`, code: `c${ISOLATE}ode`, file: `fi${RLO}le.ts`, line: 1 }], dropped: 0, limit: 10 }));
    for (const html of [steps, timeline, diagnostics]) expect(shown(html)).not.toMatch(BIDI);
    expect(steps).toContain("Title gnp.exe");
    expect(steps).toContain("done here");
    expect(timeline).toContain("Title gnp.exe");
    expect(diagnostics).toContain("diag txt.exe");
    expect(diagnostics).toContain("file.ts:1");
  });

  test("execution.js: steps, diagnostics, the output and the failure as events bring them", async () => {
    const { page, send } = liveExecutionPage();
    try {
      send("execution.step", { id: step.id, title: step.title });
      send("execution.step_done", { id: step.id, ok: true, message: step.message });
      send("execution.diagnostic", { severity: "warning", message: `diag ${RLO}txt.exe`, code: `c${ISOLATE}ode`, file: `fi${RLO}le.ts`, line: 1 });
      await page.settle();
      const failure = { error_code: "sneaky_failure", stage: "run", message: `failed ${RLO}here`, retryability: "never", outcome_certainty: "not_applied", correlation_id: "c", request_id: "r", trace_id: "t", suggestion: `try ${RLO}again`, context: { [`ke${RLO}y`]: `val${ISOLATE}ue` } };
      send("execution.completed", { state: "failed", failure, duration_ms: 5 });
      await page.settle();
      const shown = page.document.body.textContent ?? "";
      expect(shown).not.toMatch(BIDI);
      expect(page.document.querySelector('[data-slot="steps"] tr[data-step-id] [data-field="title"]')!.textContent).toBe("Title gnp.exe");
      expect(page.document.querySelector('[data-slot="diagnostics"] [data-field="message"]')!.textContent).toBe("diag txt.exe");
      expect(page.document.querySelector('[data-failure-field="message"]')!.textContent).toBe("failed here");
      expect(page.document.querySelector('[data-failure-field="context"]')!.textContent).toContain('"ke\\u202ey": "val\\u2067ue"');
    } finally {
      await page.close();
    }
  });

  test("execution.js: the output as the completed event brings it", async () => {
    const snapshot = runningSnapshot();
    const page = loadPage(executionHtml(snapshot), { path: `/cockpit/executions/${ID}`, scripts: ["socket.js", "format.js", "log-filter.js", "refresh.js", "execution.js"] });
    try {
      const socket = page.sockets[0]!;
      socket.open();
      socket.receive({ type: "stream.ready", schema_version: "1", subscribed: [ID], replayed: 0, truncated: false, heartbeat_ms: 20_000 });
      socket.receive(event(snapshot.last_sequence + 1, "execution.completed", { state: "succeeded", output: { [`fi${RLO}eld`]: `sca${RLO}lar` }, duration_ms: 5 }));
      await page.settle();
      const output = page.document.querySelector('[data-slot="output"]')!.textContent ?? "";
      expect(output).not.toMatch(BIDI);
      expect(output).toContain('"fi\\u202eeld": "sca\\u202elar"');
    } finally {
      await page.close();
    }
  });
});

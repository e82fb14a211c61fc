import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { failureToolResult } from "../../runtime/mcp/failure-result.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { liveExecutionPage } from "./_support/fixtures.ts";

// A handler's colour is kept with its texts (docs/cockpit.md) and painted in the log alone:
// everywhere else the cockpit shows a text, its escape sequences are removed, never shown as a box
// and "[31m" (a tester saw them in steps, progress, diagnostics, the failure and the output).
const ESC = /[\u001b\u009b]/;
const red = (text: string) => `\\x1b[31m${text}\\x1b[0m`;

const COLOURFUL = `import { capability, CapabilityError } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.colourful", title: "Colourful", description: "Puts colour in every text it gives.", effect: "read",
  input: v.object({ fail: v.boolean() }),
  output: v.any(),
  async handler(input, ctx) {
    ctx.progress.step("paint", "${red("Title red")}");
    ctx.progress.progress(1, 2, "${red("half way")}");
    ctx.progress.diagnostic({ severity: "warning", message: "${red("diag red")}", file: "a.ts", line: 1 });
    ctx.progress.stepDone("paint", true, "${red("done red")}");
    console.log("${red("logged red")}");
    if (input.fail) throw new CapabilityError("painted", "${red("failed red")}", { suggestion: "${red("try red")}" });
    return { text: "${red("out red")}", rows: [{ cell: "${red("cell red")}" }] };
  },
});
`;

let server: CockpitServer;

describe("the cockpit shows no escape sequence outside the log", () => {
  beforeAll(async () => {
    server = await startCockpitServer({}, { "team.colourful.ts": COLOURFUL });
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const fail of [false, true]) {
    test(`the execution page of a ${fail ? "failed" : "succeeded"} execution: steps, progress, diagnostics, ${fail ? "the failure" : "the output"}; the log keeps its colour as classes`, async () => {
      const id = await server.start("team.colourful", { fail });
      await server.completed(id);
      const { html } = await server.page(`/cockpit/executions/${id}`);
      expect(html).not.toMatch(ESC);
      for (const text of ["Title red", "half way", "diag red", "done red", ...(fail ? ["failed red", "try red"] : ["out red", "cell red"])]) expect({ text, shown: html.includes(text) }).toEqual({ text, shown: true });
      // The JSON view writes the output's ESC as its escape (\u001b): the exact value, as JSON says it.
      if (!fail) expect(html).toContain("&quot;\\u001b[31mout red");
      expect(html.replace(/<pre class="json"[\s\S]*?<\/pre>/g, "")).not.toContain("[31m");
      expect(html).toMatch(/class="[^"]*ansi-red[^"]*"[^>]*>logged red/);
    });
  }

  test("the executions list and the overview: the progress message", async () => {
    const id = await server.start("team.colourful", { fail: false });
    await server.completed(id);
    for (const path of ["/cockpit/executions", "/cockpit"]) {
      const { html } = await server.page(path);
      expect({ path, escapes: ESC.test(html) }).toEqual({ path, escapes: false });
    }
  });

  test("execution.js: a step, progress, a diagnostic and a failure as events bring them", async () => {
    const { page, send } = liveExecutionPage();
    try {
      send("execution.step", { id: "paint", title: "\u001b[31mTitle red\u001b[0m" });
      send("execution.progress", { current: 1, total: 2, message: "\u001b[1;32mhalf way\u001b[m" });
      send("execution.diagnostic", { severity: "warning", message: "\u001b[31mdiag red\u001b[0m", file: "a.ts", line: 1 });
      await page.settle();
      const failure = { error_code: "painted", stage: "run", message: "\u001b[31mfailed red\u001b[0m", retryability: "never", outcome_certainty: "not_applied", correlation_id: "c", request_id: "r", trace_id: "t", suggestion: "\u001b]0;title\u0007try red", context: {} };
      send("execution.completed", { state: "failed", failure, duration_ms: 5 });
      await page.settle();
      expect(page.document.body.textContent ?? "").not.toMatch(ESC);
      expect(page.document.querySelector('[data-slot="steps"] tr[data-step-id] [data-field="title"]')!.textContent).toBe("Title red");
      expect(page.document.querySelector('[data-slot="diagnostics"] [data-field="message"]')!.textContent).toBe("diag red");
      expect(page.document.querySelector('[data-failure-field="message"]')!.textContent).toBe("failed red");
      expect(page.document.querySelector('[data-failure-field="suggestion"]')!.textContent).toBe("try red");
    } finally {
      await page.close();
    }
  });
});

// A capability's own texts, and a file's load error, are shown outside any log too (tester F).
const TITLED = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.titled", title: "${red("Title")} \u202eRTL", description: "A ${red("red")} **bold** \u202edescription", effect: "read",
  input: v.object({}), output: v.object({}),
  async handler() { return {}; },
});
`;
const BROKEN = `throw new Error("load ${red("failed")} \u202eRTL");
export default null;
`;

describe("the cockpit shows no escape sequence or bidi override of a capability's title, description or load error", () => {
  let titled: CockpitServer;
  beforeAll(async () => {
    // A file whose very name holds an escape sequence (a window title) and a bidi override (tester H).
    titled = await startCockpitServer({}, { "team.titled.ts": TITLED, "team.broken.ts": BROKEN, "esc.\u001b]0;FN\u0007na\u202eme.ts": BROKEN });
  });
  afterAll(async () => {
    await titled?.stop();
  });

  test("the overview, the capabilities, the capability's page and an execution's page", async () => {
    const id = await titled.start("team.titled", {});
    await titled.completed(id);
    for (const path of ["/cockpit", "/cockpit/capabilities", "/cockpit/capabilities/team.titled", `/cockpit/executions/${id}`]) {
      const { html } = await titled.page(path);
      expect({ path, escapes: /[\u001b\u009b\u202e]/.test(html), painted: html.includes("[31m") }).toEqual({ path, escapes: false, painted: false });
    }
    expect((await titled.page("/cockpit/capabilities/team.titled")).html).toContain("Title RTL");
    // What the file threw is the server log's only (docs/security.md): the page names its class.
    const listed = (await titled.page("/cockpit/capabilities")).html;
    expect(listed).toContain("it threw while loading: Error (what it said is not shown to clients");
    expect(listed).not.toContain("load failed");
    expect((await titled.page("/cockpit/capabilities")).html).toContain("capabilities/esc.name.ts");
  });
});

describe("an MCP failure's text", () => {
  test("carries no escape sequence of the handler's message (the descriptor keeps it as stored)", () => {
    const failure = buildFailure({ error_code: "painted", stage: "run", message: "\u001b[31mfailed red\u001b[0m", suggestion: "\u001b[1mtry\u001b[0m", request_id: "r", trace_id: "0".repeat(32) });
    const result = failureToolResult(failure);
    expect((result.content[0] as { text: string }).text).toStartWith("painted: failed red try (retryability");
    expect((result.structuredContent as { message: string }).message).toBe("\u001b[31mfailed red\u001b[0m");
  });

  test("says a suggestion the message holds already once (the run-identity limit's; checking tester, session 34)", () => {
    const advice = "Start without a run_id, or raise the server's limit.";
    const failure = buildFailure({ error_code: "capacity", stage: "admit", message: `Cannot record run_id "r": the limit is reached. ${advice}`, suggestion: advice, request_id: "r", trace_id: "0".repeat(32) });
    const text = (failureToolResult(failure).content[0] as { text: string }).text;
    expect(text.split(advice)).toHaveLength(2);
  });
});

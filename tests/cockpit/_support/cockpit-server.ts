import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerDocketModules } from "../../../runtime/adapter/bun-modules.ts";
import { resolveLimits, type Limits } from "../../../runtime/execution/limits.ts";
import { startServer } from "../../../runtime/server/serve.ts";
import { createCockpit } from "../../../cockpit/app.tsx";
import { tempCheckout } from "../../server/_support/servers.ts";
import { completedOf, openLive } from "../../server/_support/live-client.ts";

/** A write capability whose form exercises every control: enum, secret, bounded integer, list, boolean, JSON fallback. */
const DEPLOY = `import { capability, sensitive } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.deploy", title: "Deploy the team's service", description: "Pretends to deploy; changes nothing real.", effect: "write",
  input: v.object({
    target: v.pipe(v.picklist(["staging", "production"]), v.description("Where to deploy.")),
    token: sensitive(v.string()),
    replicas: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10), v.description("How many copies.")), 2),
    ratio: v.optional(v.number()),
    tags: v.optional(v.array(v.string())),
    ports: v.optional(v.array(v.pipe(v.number(), v.integer()))),
    dry_run: v.optional(v.boolean(), true),
    options: v.optional(v.object({ region: v.string() })),
    note: v.optional(v.string()),
  }),
  output: v.object({ deployed: v.string(), token_length: v.number(), replicas: v.number(), tags: v.array(v.string()) }),
  handler(input, ctx) {
    ctx.progress.log("deploying to " + input.target + (input.note ? ": " + input.note : ""));
    return { deployed: input.target, token_length: input.token.length, replicas: input.replicas, tags: input.tags ?? [] };
  },
});
`;

/** A read capability that logs, streams and reports whatever it is given: the escaping fixture. */
const ECHO = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.echo", title: "Echo", description: "Logs its message, streams it, reports it as a diagnostic, returns it.", effect: "read",
  input: v.object({ message: v.string(), path: v.optional(v.string()) }),
  output: v.object({ message: v.string() }),
  handler(input, ctx) {
    ctx.progress.step("echo", "Echo " + input.message);
    ctx.progress.log(input.message);
    ctx.progress.stream("stdout", input.message + "\\n");
    if (input.path) ctx.progress.log("reading " + input.path, "warn");
    ctx.progress.diagnostic({ severity: "warning", message: input.message, file: input.path ?? "echo.txt", line: 3, column: 7, code: "echoed" });
    ctx.progress.stepDone("echo", true, "echoed");
    return { message: input.message };
  },
});
`;

/** A slow capability that never checks for cancellation: Cancel must not be offered for it. */
const SLEEP = `import { capability } from "docket";
import * as v from "valibot";
import { setTimeout as delay } from "node:timers/promises";
export default capability({
  id: "team.sleep", title: "Sleep", description: "Waits, and cannot be cancelled.", effect: "read",
  input: v.object({ ms: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10000)) }),
  output: v.object({ slept: v.number() }),
  async handler(input) {
    await delay(input.ms);
    return { slept: input.ms };
  },
});
`;

/**
 * Steps that each wait for a gate file the test writes (`.gate-<name>-<n>` in the checkout), so a
 * browser test sees every step arrive live without depending on timing. Cancellable.
 */
const GATE = `import { capability } from "docket";
import * as v from "valibot";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
export default capability({
  id: "team.gate", title: "Gated steps", description: "Each step waits for its gate file.", effect: "read", cancellable: true,
  input: v.object({
    name: v.pipe(v.string(), v.regex(/^[a-z0-9-]{1,40}$/), v.description("Names the gate files.")),
    steps: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(20)), 3),
  }),
  output: v.object({ steps: v.number() }),
  async handler(input, ctx) {
    for (let i = 1; i <= input.steps; i++) {
      ctx.progress.step("step-" + i, "Gate " + i);
      while (!existsSync(join(ctx.root, ".gate-" + input.name + "-" + i))) {
        if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
        await delay(5);
      }
      ctx.progress.log("passed gate " + i);
      ctx.progress.progress(i, input.steps, "gate " + i + " passed");
      ctx.progress.stepDone("step-" + i, true);
    }
    return { steps: input.steps };
  },
});
`;

/**
 * A report: coloured log lines (and one that tries to be markup), two timed steps, an artifact,
 * and an output with a table, a long text and plain fields: the execution page's shapes.
 */
export const REPORT_CSV = "name,size\nalpha,3\nbeta,12\ngamma,7\n";
const REPORT = `import { capability } from "docket";
import * as v from "valibot";
import { setTimeout as delay } from "node:timers/promises";
export default capability({
  id: "team.report", title: "Sizes report", description: "Measures **three** things and writes a CSV.\\n\\n\`\`\`\\n" + "size,".repeat(120) + "\\n\`\`\`", effect: "read",
  input: v.object({ label: v.optional(v.string(), "sizes"), nested: v.optional(v.object({ depth: v.number(), tag: v.string() })) }),
  output: v.object({ label: v.string(), total: v.number(), rows: v.array(v.object({ name: v.string(), size: v.number() })), notes: v.string(), nested: v.optional(v.any()) }),
  async handler(input, ctx) {
    ctx.progress.step("measure", "Measure the things");
    ctx.progress.log("\u001b[1;31mERROR\u001b[0m something red and \u001b[32mgreen\u001b[0m", "error");
    ctx.progress.log("<script>window.__pwned = 1</script><b>not bold</b>", "info");
    ctx.progress.log("a quiet detail", "debug");
    await delay(30);
    ctx.progress.stepDone("measure", true, "3 measured");
    ctx.progress.step("write", "Write the CSV");
    await ctx.artifacts.write("sizes.csv", ${JSON.stringify(REPORT_CSV)});
    await delay(20);
    ctx.progress.stepDone("write", true);
    const rows = [{ name: "alpha", size: 3 }, { name: "beta", size: 12 }, { name: "gamma", size: 7 }];
    return { label: input.label, total: 22, rows, notes: "All three things were measured with the same ruler, twice, and the larger reading was kept.\\nSecond line.", nested: input.nested };
  },
});
`;

/** A file that does not load (a syntax error on line 3): the overview and registry must say so. */
const BROKEN = 'import { capability } from "docket";\nexport default capability({ id: "team.broken",\n  oops oops\n});\n';

/** A cockpit test server: the Bun adapter, a temp checkout with the fixture capabilities, the cockpit mounted. */
export interface CockpitServer {
  url: string;
  root: string;
  stop(): Promise<void>;
  /** Starts an execution over the API; returns its id. */
  start(capability: string, input: unknown): Promise<string>;
  /** Resolves once the execution's `execution.completed` arrived over the live channel. */
  completed(id: string): Promise<any>;
  /** Opens gate `step` of the team.gate execution named `name`. */
  openGate(name: string, step: number): void;
  /** GET a page; the body as text. */
  page(path: string): Promise<{ status: number; headers: Headers; html: string }>;
  /** POST a form (urlencoded) with this server's Origin, as a browser would; redirects not followed, but for a Run's to its result page. */
  post(path: string, form: Record<string, string | string[]>, headers?: Record<string, string>): Promise<Response>;
}

/** Starts the server; `limits` overrides some bounds (e.g. a small log tail), `capabilities` adds capability files (name → source). */
export async function startCockpitServer(limits: Partial<Record<keyof Limits, number>> = {}, capabilities: Record<string, string> = {}): Promise<CockpitServer> {
  registerDocketModules();
  const root = tempCheckout();
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "team.deploy.ts"), DEPLOY);
  writeFileSync(join(root, "capabilities", "team.echo.ts"), ECHO);
  writeFileSync(join(root, "capabilities", "team.sleep.ts"), SLEEP);
  writeFileSync(join(root, "capabilities", "team.gate.ts"), GATE);
  writeFileSync(join(root, "capabilities", "team.report.ts"), REPORT);
  writeFileSync(join(root, "capabilities", "team.broken.ts"), BROKEN);
  for (const [name, source] of Object.entries(capabilities)) writeFileSync(join(root, "capabilities", name), source);
  const server = await startServer({
    cwd: root,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits({ overrides: limits }),
    capabilityDirs: [],
    runtime: "bun",
    log: () => undefined,
    mounts: (plane, live) => ({ cockpit: createCockpit({ plane, live, log: () => undefined }) }),
  });
  const url = server.url;
  return {
    url,
    root,
    async stop() {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
    async start(capability, input) {
      const response = await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ capability, input }) });
      const body = (await response.json()) as any;
      if (response.status !== 200) throw new Error(`start ${capability} → ${response.status} ${JSON.stringify(body)}`);
      return body.execution.id;
    },
    async completed(id) {
      const live = await openLive(url, `execution=${id}`);
      const frame = await live.waitFor(completedOf(id));
      await live.close();
      return frame;
    },
    openGate(name, step) {
      writeFileSync(join(root, `.gate-${name}-${step}`), "");
    },
    async page(path) {
      const response = await fetch(url + path, { redirect: "manual" });
      return { status: response.status, headers: response.headers, html: await response.text() };
    },
    async post(path, form, headers = {}) {
      const body = new URLSearchParams();
      for (const [name, value] of Object.entries(form)) for (const v of Array.isArray(value) ? value : [value]) body.append(name, v);
      const response = await fetch(url + path, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin: url, ...headers }, body });
      // A Run's page is read by the GET its 303 names, as a browser reads it (Post/Redirect/Get).
      const location = response.headers.get("location");
      return response.status === 303 && location !== null && /[?&]result=/.test(location) ? fetch(url + location, { redirect: "manual" }) : response;
    },
  };
}

// A capability file as careless as real code, through the compiled binary: it logs, streams and
// reports its secret everywhere and throws raw library errors, strings and odd objects. No byte a
// client can read — snapshot, events, live frames, list, cockpit HTML, HTTP error, MCP over HTTP
// and stdio, GitHub Actions output and step summary — may carry the secret or the thrown text.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { buildBinary, cleanEnv, docket, fromBinary, oneJsonDocument, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles, type DocketRunner, type StreamWatch } from "./_harness.ts";

const SECRET = "tok-SECRET-5f3a9c1e";
// What the handler throws besides the secret: a marker, credentials in a URL, a path on the host.
const THROWN_MARKERS = ["THROWN-TEXT-77", "hunter2-pw", "/opt/docket-nope"];
const FORBIDDEN = [SECRET, ...THROWN_MARKERS];

const LEAK = `import { capability, CapabilityError, sensitive } from "docket";
import * as v from "valibot";
import { readFile } from "node:fs/promises";

const THROWN = "THROWN-TEXT-77 https://admin:hunter2-pw@db.internal/x /opt/docket-nope/credentials/api-key.txt";

export default capability({
  id: "leak.text",
  title: "Leak text",
  description: "Says its secret everywhere, then fails in the way its mode names.",
  effect: "read",
  input: v.object({
    token: sensitive(v.string()),
    mode: v.picklist(["ok", "error", "fs", "string", "null", "proxy", "tostring", "cause", "capability", "type"]),
  }),
  output: v.object({ said: v.string(), nested: v.object({ again: v.string() }) }),
  async handler(input, ctx) {
    const t = input.token;
    ctx.progress.step("connect", \`Connecting with \${t}\`);
    ctx.progress.log(\`using \${t}\`);
    ctx.progress.log("\\u001b[31mred\\u001b[0m plain");
    ctx.progress.log(\`the whole input: \${JSON.stringify(input)}\`);
    ctx.progress.stream("stdout", \`token=\${t}\\nurl=https://u:\${encodeURIComponent(t)}@host/\\n\`);
    ctx.progress.progress(1, 2, \`sent \${t}\`);
    ctx.progress.diagnostic({ severity: "warning", code: "leaky", message: \`saw \${t}\`, file: "a.ts", line: 1 });
    ctx.progress.stepDone("connect", true, \`done with \${t}\`);
    switch (input.mode) {
      case "ok":
        return { said: \`the token is \${t}\`, nested: { again: t } };
      case "error":
        throw new Error(\`connect failed key=\${t} \${THROWN}\`);
      case "fs":
        await readFile("/opt/docket-nope/credentials/api-key.txt");
        return { said: "", nested: { again: "" } };
      case "string":
        throw \`\${THROWN} \${t}\`;
      case "null":
        throw null;
      case "proxy": {
        const trap = () => { throw new Error(THROWN); };
        throw new Proxy({}, { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap, getOwnPropertyDescriptor: trap });
      }
      case "tostring":
        throw { message: THROWN, toString() { throw new Error(THROWN); } };
      case "cause":
        throw new Error("outer", { cause: new Error(\`\${THROWN} \${t}\`) });
      case "capability":
        // A bell inside the token: the text is made safe to print before the token is masked, so it cannot show it whole.
        throw new CapabilityError("upstream_refused", \`the upstream refused \${t} (\${t.slice(0, 4)}\\u0007\${t.slice(4)})\`, { context: { url: \`https://u:\${t}@host/\` }, suggestion: \`retry without \${t.slice(0, 4)}\\u0007\${t.slice(4)}\` });
      case "type":
        return (undefined as any)[THROWN];
    }
  },
});
`;

/** The class each failing mode is named by, and nothing more. */
const CLASS_OF: Record<string, string> = {
  error: "Error",
  fs: "Error ENOENT",
  string: "a string (not an Error)",
  null: "null",
  proxy: "an object (not an Error)",
  tostring: "an object (not an Error)",
  cause: "Error",
  type: "TypeError",
};
const MODES = ["ok", "capability", ...Object.keys(CLASS_OF)];

function expectClean(what: string, text: string): void {
  for (const word of FORBIDDEN) {
    if (text.includes(word)) throw new Error(`${what} holds ${JSON.stringify(word)}:\n${text.slice(Math.max(0, text.indexOf(word) - 300), text.indexOf(word) + 200)}`);
  }
}

let binary: DocketRunner;
let binaryPath: string;

beforeAll(async () => {
  binaryPath = await buildBinary();
  binary = fromBinary(binaryPath);
}, 180_000);

afterAll(removeTempDirs);

describe("docket run with a hostile capability (compiled binary, GitHub Actions)", () => {
  test("each way of failing shows the capability, the stage and the class only; the secret is masked and announced with ::add-mask:: first", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/leak.text.ts": LEAK });
    for (const mode of MODES) {
      const summary = join(checkout, `summary-${mode}.md`);
      writeFiles(checkout, { [`summary-${mode}.md`]: "" });
      const ran = await docket(binary, ["run", "leak.text", "--input", JSON.stringify({ mode }), "--input-env", "token=LEAK_TOKEN", "--format", "json"], {
        cwd: checkout,
        env: { LEAK_TOKEN: SECRET, GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary },
      });
      const document = oneJsonDocument(ran.stdout);
      expectClean(`stdout of mode ${mode}`, ran.stdout);
      expectClean(`step summary of mode ${mode}`, readFileSync(summary, "utf8"));
      // The runner masks from the first line on: nothing may come before the announcement.
      expect(ran.stderr.startsWith(`::add-mask::${SECRET}\n`)).toBe(true);
      // Past the announcement, docket's own stderr (its log) has the secret masked too.
      expect(ran.stderr.replaceAll(`::add-mask::${SECRET}\n`, "")).not.toContain(SECRET);
      expect(ran.stdout).toContain("[redacted]");
      if (mode === "ok") {
        expect(ran.code).toBe(0);
        expect(document.output).toEqual({ said: "the token is [redacted]", nested: { again: "[redacted]" } });
        continue;
      }
      expect(ran.code).toBe(1);
      const failure = document.failure;
      if (mode === "capability") {
        expect(failure).toMatchObject({ error_code: "upstream_refused", message: "the upstream refused [redacted] ([redacted])", suggestion: "retry without [redacted]", context: { url: "https://u:[redacted]@host/" } });
        continue;
      }
      expect(failure).toMatchObject({ error_code: "internal", stage: "run", context: { capability: "leak.text", stage: "run", error_class: CLASS_OF[mode] } });
      expect(failure.message).toStartWith("leak.text failed at stage run: its handler threw ");
      expect(failure.message).toContain(CLASS_OF[mode]!);
      // The thrown text is in this process's log (its stderr), under the correlation id.
      const logLine = ran.stderr.split("\n").find((line) => line.includes(failure.correlation_id) && line.includes("leak.text"));
      expect(logLine).toBeDefined();
      if (mode === "error") expect(ran.stderr).toContain("THROWN-TEXT-77");
    }
  }, 120_000);

  test("--input-env with a variable that is not set is a usage error naming it", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/leak.text.ts": LEAK });
    const ran = await docket(binary, ["run", "leak.text", "--input", '{"mode":"ok"}', "--input-env", "token=NOT_SET_HERE"], { cwd: checkout });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain("the environment variable NOT_SET_HERE is not set");
  });
});

/** Every frame the live channel sends for one execution until it completes, as raw text. */
function liveFrames(url: string, id: string): Promise<string> {
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}/events?execution=${encodeURIComponent(id)}`);
  let text = "";
  return new Promise((resolve, reject) => {
    socket.onerror = () => reject(new Error(`live channel of ${id} failed`));
    socket.onmessage = (message) => {
      text += `${String(message.data)}\n`;
      if (JSON.parse(String(message.data)).type !== "execution.completed") return;
      socket.close();
      resolve(text);
    };
  });
}

describe("docket serve with a hostile capability (compiled binary)", () => {
  let checkout: string;
  let server: ReturnType<typeof spawnDocket>;
  let stderr: StreamWatch;
  let url: string;

  beforeAll(async () => {
    checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/leak.text.ts": LEAK });
    server = spawnDocket(binary, ["serve", "--port", "0", "--no-watch"], { cwd: checkout });
    stderr = watchStream(server.stderr);
    url = (await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
  }, 60_000);

  afterAll(async () => {
    server?.kill("SIGINT");
    await server?.exited;
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });

  test("executions: snapshot, events, live frames, list and cockpit pages never hold the secret or thrown text; the log has the thrown text", async () => {
    for (const mode of MODES) {
      const started = await post("/api/v1/executions/start", { capability: "leak.text", input: { token: SECRET, mode } }, { "X-Docket-Actor": "cockpit" });
      expect(started.status).toBe(200);
      const { execution } = (await started.json()) as { execution: { id: string; actor: unknown } };
      // A header claims nothing: the actor is what the edge established.
      expect(execution.actor).toEqual({ kind: "http" });
      const frames = await liveFrames(url, execution.id);
      expectClean(`live frames of ${mode}`, frames);
      const snapshot = await (await fetch(`${url}/api/v1/executions/get?id=${execution.id}`)).text();
      expectClean(`snapshot of ${mode}`, snapshot);
      expect(snapshot).toContain("[redacted]");
      expectClean(`events of ${mode}`, await (await fetch(`${url}/api/v1/executions/events?id=${execution.id}`)).text());
      const page = await fetch(`${url}/cockpit/executions/${execution.id}`);
      const html = await page.text();
      expectClean(`cockpit page of ${mode}`, html);
      // Its coloured log line rendered as coloured text (the binary's cockpit answered 500 to it once).
      expect(page.status).toBe(200);
      expect(html).toMatch(/<span class="ansi-red-fg">red<\/span>/);
      const parsed = JSON.parse(snapshot);
      if (CLASS_OF[mode]) {
        expect(parsed.failure.context.error_class).toBe(CLASS_OF[mode]!);
        // The thrown text went to the server's log, under the failure's correlation id.
        if (mode === "error") await stderr.until(new RegExp(`${parsed.failure.correlation_id}[^\\n]*leak\\.text[^\\n]*THROWN-TEXT-77`));
      }
    }
    expectClean("executions.list", await (await fetch(`${url}/api/v1/executions?limit=500`)).text());
    expectClean("cockpit executions", await (await fetch(`${url}/cockpit/executions`)).text());
    expectClean("cockpit overview", await (await fetch(`${url}/cockpit`)).text());
    // The log masks the secret too: only the thrown text a client never sees is there.
    await stderr.until(/THROWN-TEXT-77/);
    expect(await Promise.race([stderr.until(new RegExp(SECRET)).then(() => "leaked"), Promise.resolve("clean")])).toBe("clean");
  }, 120_000);

  test("direct calls: the HTTP answer, error or output, never holds the secret or thrown text", async () => {
    for (const mode of MODES) {
      const response = await post("/api/v1/leak/text", { token: SECRET, mode });
      const body = await response.text();
      expectClean(`direct call of ${mode}`, body);
      if (mode === "ok") expect(JSON.parse(body)).toEqual({ said: "the token is [redacted]", nested: { again: "[redacted]" } });
      else if (mode === "capability") expect(response.status).toBe(422);
      else expect(JSON.parse(body).error).toMatchObject({ error_code: "internal", context: { error_class: CLASS_OF[mode] } });
    }
  }, 60_000);

  test("the cockpit: a rejected form never renders the secret back, the raw JSON box included; Run shows the output masked", async () => {
    const form = (fields: Record<string, string>) =>
      fetch(`${url}/cockpit/capabilities/leak.text`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields).toString() });
    const rejected: Array<Record<string, string>> = [
      { mode: "call", raw_json: `{"token": ${SECRET}, "mode": "ok"}` },
      { mode: "call", raw_json: JSON.stringify({ token: SECRET, mode: "no-such-mode" }) },
      { mode: "call", "input.token": SECRET, "input.mode": "" },
      { mode: "start", raw_json: JSON.stringify({ token: SECRET }) },
    ];
    for (const fields of rejected) {
      const page = await form(fields);
      expect(page.status).toBe(400);
      expectClean(`rejected cockpit form ${JSON.stringify(Object.keys(fields))}`, await page.text());
    }
    for (const mode of ["ok", "error", "capability"]) {
      const page = await form({ mode: "call", "input.token": SECRET, "input.mode": JSON.stringify(mode) });
      const html = await page.text();
      expectClean(`cockpit Run of ${mode}`, html);
      if (mode === "ok") expect(html).toContain("the token is [redacted]");
    }
  }, 60_000);

  test("MCP over HTTP and over stdio (docket mcp forwarding): tool results never hold the secret or thrown text; failed waits are isError", async () => {
    const http = new Client({ name: "hostile-http", version: "1.0.0" });
    await http.connect(new StreamableHTTPClientTransport(new URL("/mcp", url)));
    const transport = new StdioClientTransport({ command: binaryPath, args: ["mcp"], cwd: checkout, env: cleanEnv(), stderr: "pipe" });
    const stdio = new Client({ name: "hostile-stdio", version: "1.0.0" });
    await stdio.connect(transport);
    try {
      for (const [name, client] of [["http", http], ["stdio", stdio]] as const) {
        for (const mode of ["ok", "error", "fs", "capability", "proxy"]) {
          const direct = await client.callTool({ name: "leak_text", arguments: { token: SECRET, mode } });
          expectClean(`MCP ${name} direct ${mode}`, JSON.stringify(direct));
          expect(Boolean(direct.isError)).toBe(mode !== "ok");
          const waited = await client.callTool({ name: "docket_execution_start", arguments: { capability: "leak.text", input: { token: SECRET, mode }, wait: true } });
          expectClean(`MCP ${name} waited ${mode}`, JSON.stringify(waited));
          expect(Boolean(waited.isError)).toBe(mode !== "ok");
          if (mode !== "ok") expect(waited.structuredContent).toMatchObject({ error_code: mode === "capability" ? "upstream_refused" : "internal", correlation_id: expect.stringMatching(/^c-/) });
        }
      }
    } finally {
      await http.close();
      await stdio.close();
    }
  }, 90_000);

  test("a docket run reporting to the server: what the server holds and shows of it is masked", async () => {
    const ran = await docket(binary, ["run", "leak.text", "--input", '{"mode":"error"}', "--input-env", "token=LEAK_TOKEN", "--format", "json"], { cwd: checkout, env: { LEAK_TOKEN: SECRET } });
    expect(ran.code).toBe(1);
    const id = oneJsonDocument(ran.stdout).execution.id;
    const snapshot = await (await fetch(`${url}/api/v1/executions/get?id=${id}`)).text();
    expect(JSON.parse(snapshot).actor.kind).toBe("cli");
    expectClean("reported snapshot", snapshot);
    expectClean("reported events", await (await fetch(`${url}/api/v1/executions/events?id=${id}`)).text());
    expectClean("reported cockpit page", await (await fetch(`${url}/cockpit/executions/${id}`)).text());
  }, 60_000);
});

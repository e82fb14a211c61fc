import { afterAll, beforeAll, expect, test } from "bun:test";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BunPlugin } from "bun";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { removeCheckout, structured, tempCheckout, type SeenProgress } from "./_support.ts";

// /mcp on the Node adapter: the SDK's web-standard transport behind @hono/node-server, in a real `node`.
const ENTRY = fileURLToPath(new URL("./_node-entry.ts", import.meta.url));
const WORKER = fileURLToPath(new URL("../../runtime/worker/worker-entry.ts", import.meta.url));

// Node has no Bun.plugin; the built-ins need no virtual modules, so their registration is a no-op there.
const withoutBunModules: BunPlugin = {
  name: "no-bun-modules",
  setup(build) {
    build.onLoad({ filter: /runtime[\\/]adapter[\\/]bun-modules\.ts$/ }, () => ({ contents: "export function registerDocketModules() {}", loader: "ts" }));
  },
};

const bundle = mkdtempSync(join(tmpdir(), "docket-mcp-node-"));
const root = tempCheckout();
let child: ChildProcess | null = null;
let exited: Promise<unknown> = Promise.resolve();
let url = "";

beforeAll(async () => {
  const built = await Bun.build({
    entrypoints: [ENTRY, WORKER],
    outdir: bundle,
    target: "node",
    format: "esm",
    // Split like the real build: what is imported on demand (the sqlite store, Bun only) stays
    // in a chunk that Node never loads.
    splitting: true,
    naming: { entry: "[name].mjs", chunk: "[name]-[hash].mjs" },
    external: ["bufferutil", "utf-8-validate"],
    plugins: [withoutBunModules],
  });
  if (!built.success) throw new AggregateError(built.logs, "Node bundle failed");
  const started = spawn("node", [join(bundle, "_node-entry.mjs")], { env: { ...process.env, DOCKET_TEST_CWD: root }, stdio: ["ignore", "pipe", "pipe"] });
  child = started;
  exited = new Promise((resolve) => started.once("exit", resolve));
  let stderr = "";
  started.stderr!.on("data", (chunk) => (stderr += chunk));
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    started.stdout!.on("data", (chunk) => {
      out += chunk;
      if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")));
    });
    exited.then(() => reject(new Error(`node server exited before printing its URL:\n${stderr}`)));
  });
  url = (JSON.parse(line) as { url: string }).url;
}, 60_000);

afterAll(async () => {
  child?.kill("SIGTERM");
  await exited;
  rmSync(bundle, { recursive: true, force: true });
  removeCheckout(root);
});

test("/mcp on the Node adapter lists the tools and streams a waiting start's progress", async () => {
  const client = new Client({ name: "node-agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", url)));
  try {
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("docket_execution_start");
    const seen: SeenProgress[] = [];
    const result = await client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 2, delay_ms: 5 }, wait: true } },
      undefined,
      { onprogress: (p) => void seen.push(p as SeenProgress) },
    );
    expect(structured(result).execution).toMatchObject({ state: "succeeded", actor: { kind: "mcp", client: "node-agent" } });
    expect(seen.at(-1)).toMatchObject({ progress: 2, total: 2 });
  } finally {
    await client.close();
  }
});

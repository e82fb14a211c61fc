// What the MCP tests share: a plane in this process, an SDK client linked to it, a real server,
// and a way to await an execution's end without sleeping.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane, type BootedPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { createDocketMcpServer } from "../../runtime/mcp/server.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { SOURCE_FLAGS } from "../cli/_harness.ts";

export const REPO = fileURLToPath(new URL("../../", import.meta.url));
export const BUN = join(REPO, "node_modules", ".bin", "bun");
export const MAIN = join(REPO, "runtime", "cli", "main.ts");
/** `bun … runtime/cli/main.ts` as the binary runs: no checkout's .env or bunfig.toml (cli/_harness.ts). */
export const FROM_SOURCE = [BUN, ...SOURCE_FLAGS, MAIN];

/** A fresh checkout (temp folder with `.git`) by its real path, with files (relative path → text). */
export function tempCheckout(files: Record<string, string> = {}): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "docket-mcp-")));
  mkdirSync(join(root, ".git"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

export function removeCheckout(root: string): void {
  rmSync(root, { recursive: true, force: true });
}

/** A user's capability file: imports "docket" and "valibot" only; `body` is the handler's body. */
export function capabilityFile(id: string, options: { input?: string; output?: string; body?: string; description?: string } = {}): string {
  return [
    'import { capability } from "docket";',
    'import * as v from "valibot";',
    "export default capability({",
    `  id: ${JSON.stringify(id)},`,
    '  title: "Greet someone",',
    `  description: ${JSON.stringify(options.description ?? "Says hello to a name.")},`,
    '  effect: "read",',
    `  input: ${options.input ?? 'v.object({ name: v.pipe(v.string(), v.minLength(1)) })'},`,
    `  output: ${options.output ?? "v.object({ greeting: v.string() })"},`,
    "  handler(input) {",
    `    ${options.body ?? "return { greeting: `Hello, ${input.name}` };"}`,
    "  },",
    "});",
    "",
  ].join("\n");
}

/** A plane booted in this process over a checkout, as `docket mcp` boots one without a server. */
export async function bootTestPlane(root: string): Promise<BootedPlane> {
  registerDocketModules();
  return bootPlane({ cwd: root, storeKind: "memory", limits: resolveLimits(), importFile: (path) => import(path), log: () => undefined });
}

/** An SDK client linked in memory to a docket MCP server over `plane`. */
export async function connectInProcess(plane: BootedPlane, clientName = "test-agent"): Promise<Client> {
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  const server = createDocketMcpServer(plane.engine, { log: () => undefined });
  const client = new Client({ name: clientName, version: "1.0.0" });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return client;
}

/** `docket serve` in this process on a free loopback port, with the surfaces it mounts by default. */
export async function serveCheckout(root: string, options: { token?: string } = {}): Promise<DocketServer> {
  registerDocketModules();
  return startServer({
    cwd: root,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits(),
    capabilityDirs: [],
    token: options.token ?? null,
    runtime: "bun",
    importFile: (path) => import(path),
    mounts: defaultMounts,
    log: () => undefined,
  });
}

/** Resolves with the execution's terminal snapshot, from the store's own subscription (no polling). */
export function terminalOf(plane: BootedPlane, id: string): Promise<ExecutionSnapshot> {
  return new Promise((resolve) => {
    let done = false;
    const subscription = plane.store.subscribe({ executions: [id], after: 0 }, (event) => {
      if (event.type !== "execution.completed" || done) return;
      done = true;
      queueMicrotask(() => subscription.unsubscribe());
      resolve(plane.store.get(id)!);
    });
  });
}

/** The terminal frame of an execution served by `url`, read from its live channel (`/events`). */
export function completedOverLive(url: string, id: string, token?: string): Promise<{ data: { state: string; failure?: { error_code: string } } }> {
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}/events?execution=${encodeURIComponent(id)}`, token ? ["docket.v1", `docket.token.${token}`] : undefined);
  return new Promise((resolve, reject) => {
    socket.onerror = () => reject(new Error(`live channel of ${id} failed`));
    socket.onmessage = (message) => {
      const frame = JSON.parse(String(message.data));
      if (frame.type !== "execution.completed") return;
      socket.close();
      resolve(frame);
    };
  });
}

/** The structured content of a tool result, typed loosely for assertions. */
export function structured(result: unknown): any {
  return (result as { structuredContent?: unknown }).structuredContent;
}

/** The execution a waited docket_execution_start that ended failed or cancelled carries as its last text. */
export function waitedExecution(result: unknown): any {
  const content = (result as { content: Array<{ type: string; text: string }> }).content;
  return JSON.parse(content.at(-1)!.text).execution;
}

/** A progress notification as the SDK client hands it to `onprogress`. */
export interface SeenProgress {
  progress: number;
  total?: number;
  message?: string;
  _meta?: Record<string, any>;
}

/** A direct-call capability that marks started.mark, waits until it is cancelled, then marks cancelled.mark. */
export const WAIT = `import { capability } from "docket";
import * as v from "valibot";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "team.wait", title: "Wait", description: "Waits until it is cancelled.", effect: "read", cancellable: true,
  input: v.object({}), output: v.object({}),
  async handler(_input, ctx) {
    writeFileSync(join(ctx.root, "started.mark"), "");
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
    writeFileSync(join(ctx.root, "cancelled.mark"), "");
    throw ctx.progress.cancellation();
  },
});
`;

/** Resolves once `look` holds; gives up (fails the test) after about 20 s. */
export async function untilSeen(look: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 800 && !look(); i++) await Bun.sleep(25);
  if (!look()) throw new Error(`Gave up waiting for ${what}`);
}

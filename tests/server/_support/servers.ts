import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { BunPlugin } from "bun";
import { resolveLimits, limitEnvName, type Limits } from "../../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../../runtime/server/serve.ts";
import { defaultMounts } from "../../../runtime/server/default-mounts.ts";
import { useDocketModules } from "../../_support/capability-fixtures.ts";
import { writeFileSync } from "node:fs";

/** A server a contract test talks to. */
export interface StartedServer {
  url: string;
  token: string | null;
  root: string;
  stop(): Promise<void>;
}

/** What a contract group asks of its server. */
export interface StartOptions {
  limits?: Partial<Record<keyof Limits, number>>;
  token?: string;
  /** What to bind (`--host`); default 127.0.0.1. */
  host?: string;
  /** Bun's idle timeout in seconds, on Node the time a request's head may take; default 10. */
  idleTimeoutSeconds?: number;
}

export type StartFn = (options?: StartOptions) => Promise<StartedServer>;

/** A fresh checkout in the temp folder (a `.git` entry makes it the root). */
export function tempCheckout(): string {
  const root = mkdtempSync(join(tmpdir(), "docket-server-"));
  mkdirSync(join(root, ".git"));
  return root;
}

/** A server of {@link serveCapabilityFiles}, with the checkout it serves. */
export interface ServedCheckout {
  server: DocketServer;
  root: string;
  /** Stops the server and removes the checkout. */
  stop(): Promise<void>;
}

/**
 * A server (Bun, in this process, the cockpit mounted) over a fresh checkout whose `capabilities/`
 * holds `files` (file name → source): a capability written for one test, served as a user's is.
 */
export async function serveCapabilityFiles(files: Record<string, string>, options: { storeKind?: "memory" | "sqlite"; limits?: Parameters<typeof resolveLimits>[0] } = {}): Promise<ServedCheckout> {
  useDocketModules();
  const root = tempCheckout();
  mkdirSync(join(root, "capabilities"));
  for (const [name, source] of Object.entries(files)) writeFileSync(join(root, "capabilities", name), source);
  const server = await serveCheckout(root, { storeKind: options.storeKind ?? "memory", limits: resolveLimits(options.limits) });
  return {
    server,
    root,
    stop: async () => {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The bytes of a checkout's sqlite store (its file and write-ahead log) as text, to search for what must never be stored; throws when there is none. */
export function storeFilesText(root: string): string {
  const files = ["state.db", "state.db-wal"].map((name) => join(root, ".docket", name)).filter((file) => existsSync(file));
  if (files.length === 0) throw new Error(`no store files in ${join(root, ".docket")}`);
  return files.map((file) => readFileSync(file).toString("latin1")).join("");
}

/**
 * A server (Bun, in this process, the cockpit mounted, the memory store, default limits, nothing
 * logged) over the checkout at `root`, as it is; `options` override any of those.
 */
export async function serveCheckout(root: string, options: Partial<Parameters<typeof startServer>[0]> = {}): Promise<DocketServer> {
  useDocketModules();
  return startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", importFile: (path) => import(path), mounts: defaultMounts, log: () => undefined, ...options });
}

/** The Bun adapter, in this process (what the compiled binary runs). */
export const startBun: StartFn = async (options = {}) => {
  const root = tempCheckout();
  const server = await startServer({
    cwd: root,
    host: options.host,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits({ overrides: options.limits }),
    capabilityDirs: [],
    token: options.token ?? null,
    runtime: "bun",
    log: () => undefined,
    idleTimeoutSeconds: options.idleTimeoutSeconds,
  });
  return {
    url: server.url,
    token: server.token,
    root,
    stop: async () => {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
};

const NODE_ENTRY = fileURLToPath(new URL("./node-entry.ts", import.meta.url));
const WORKER_ENTRY = fileURLToPath(new URL("../../../runtime/worker/worker-entry.ts", import.meta.url));

// Node has no Bun.plugin: user capability files cannot load there, and the built-ins need no
// virtual modules, so the registration becomes a no-op in the Node bundle.
const withoutBunModules: BunPlugin = {
  name: "no-bun-modules",
  setup(build) {
    build.onLoad({ filter: /runtime[\\/]adapter[\\/]bun-modules\.ts$/ }, () => ({ contents: "export function registerDocketModules() {}", loader: "ts" }));
  },
};

/** Bundles the Node entry and the pool's worker entry for `node` (ESM, `.mjs`); returns the entry's path. */
export async function buildNodeBundle(outdir: string): Promise<string> {
  const result = await Bun.build({
    entrypoints: [NODE_ENTRY, WORKER_ENTRY],
    outdir,
    target: "node",
    format: "esm",
    naming: "[name].mjs",
    external: ["bufferutil", "utf-8-validate"],
    plugins: [withoutBunModules],
  });
  if (!result.success) throw new AggregateError(result.logs, `Node bundle failed:\n${result.logs.map(String).join("\n")}`);
  return join(outdir, "node-entry.mjs");
}

/** The Node adapter, in a child `node` process running the bundle; stopped with SIGTERM (the CLI's path). */
export function nodeStarter(entry: string): StartFn {
  return async (options = {}) => {
    const root = tempCheckout();
    const env: Record<string, string> = { ...(process.env as Record<string, string>), DOCKET_TEST_CWD: root };
    for (const [key, value] of Object.entries(options.limits ?? {})) env[limitEnvName(key as keyof Limits)] = String(value);
    if (options.token) env.DOCKET_TEST_TOKEN = options.token;
    if (options.host) env.DOCKET_TEST_HOST = options.host;
    if (options.idleTimeoutSeconds !== undefined) env.DOCKET_TEST_IDLE_SECONDS = String(options.idleTimeoutSeconds);
    const child = spawn("node", [entry], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const first = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk) => {
        out += chunk;
        const newline = out.indexOf("\n");
        if (newline >= 0) resolve(out.slice(0, newline));
      });
      exited.then((code) => reject(new Error(`node server exited (${code}) before printing its URL:\n${stderr}`)));
    });
    const { url, token } = JSON.parse(first) as { url: string; token: string | null };
    return {
      url,
      token,
      root,
      stop: async () => {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
        rmSync(root, { recursive: true, force: true });
      },
    };
  };
}

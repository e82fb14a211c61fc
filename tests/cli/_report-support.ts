// What the end-to-end tests of docs/protocol.md share: a server on a temporary checkout, its API, and bounded polls.
import { resolveLimits, type Limits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { fromSource, spawnDocket, watchStream } from "./_harness.ts";

/** `docket serve` in this process, on a free port, serving `checkout`. */
export function serveCheckout(checkout: string, options: { limits?: Partial<Limits>; token?: string; storeKind?: "memory" | "sqlite" } = {}): Promise<DocketServer> {
  return startServer({
    cwd: checkout,
    port: 0,
    storeKind: options.storeKind ?? "memory",
    limits: resolveLimits({ overrides: options.limits }),
    capabilityDirs: [],
    token: options.token ?? null,
    runtime: "bun",
    log: () => undefined,
  });
}

/** The server's API as a test calls it: JSON in, JSON out, with the token when there is one. */
export function api(url: string, token: string | null = null) {
  const headers = (extra: Record<string, string> = {}) => (token ? { Authorization: `Bearer ${token}`, ...extra } : extra);
  return {
    url,
    async get(path: string): Promise<any> {
      const response = await fetch(url + path, { headers: headers() });
      return response.json();
    },
    async post(path: string, body: unknown): Promise<{ status: number; body: any }> {
      const response = await fetch(url + path, { method: "POST", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    },
  };
}

/**
 * Asks `probe` again until `done` holds of its answer, at most `limitMs` (a bound on a broken
 * build, not a timing under test). Polling an endpoint is the only way to see a state appear.
 */
export async function pollUntil<T>(probe: () => Promise<T>, done: (value: T) => boolean, what: string, limitMs = 15_000): Promise<T> {
  const until = Date.now() + limitMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > until) throw new Error(`Gave up waiting for ${what}; last answer: ${JSON.stringify(value).slice(0, 2000)}`);
    await Bun.sleep(25);
  }
}

/** The one execution a server holds that a process with this pid reported, once it appears in the list. */
export function reportedBy(server: ReturnType<typeof api>, pid: number, state?: string): Promise<any> {
  return pollUntil(
    async () => ((await server.get("/api/v1/executions")).items as any[]).find((e) => e.actor.kind === "cli" && e.actor.pid === pid && (state === undefined || e.state === state)),
    (found) => found !== undefined,
    `an execution reported by pid ${pid}${state ? ` in state ${state}` : ""}`,
  );
}

/** Occurrences of the line a run says when no server can see it. */
export function aloneLines(stderr: string): number {
  return stderr.match(/visible to this process alone/g)?.length ?? 0;
}

/** `docket serve --port 0` on `checkout` as a process of its own (one a test can SIGKILL or SIGSTOP), once it serves: the process and its API. */
export async function serveProcess(checkout: string, flags: string[] = []): Promise<{ serve: ReturnType<typeof spawnDocket>; http: ReturnType<typeof api>; said: ReturnType<typeof watchStream> }> {
  const serve = spawnDocket(fromSource, ["serve", "--port", "0", ...flags], { cwd: checkout });
  const said = watchStream(serve.stderr);
  const banner = await said.until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
  return { serve, http: api(banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!), said };
}

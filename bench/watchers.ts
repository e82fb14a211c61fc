// Watchers never slow the work (docs/protocol.md, "Backpressure"): one execution flooding progress
// events, timed by the engine (its snapshot's duration_ms), with no watcher and with WATCHERS
// live clients following it from another process. Default flags, memory store, loopback only;
// bounded in count and time.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveLimits } from "../runtime/execution/limits.ts";
import { startServer } from "../runtime/server/serve.ts";
import type { BenchResult } from "./run.ts";

const EVENTS = Number(process.env.DOCKET_BENCH_WATCHER_EVENTS ?? 50_000);
const WATCHERS = Number(process.env.DOCKET_BENCH_WATCHERS ?? 250);
const DEADLINE_MS = 120_000;
// Each fresh server is first warmed by a flood of this many events followed by one watcher to its
// end, with or without the watchers measured after: a server that runs is warm, and its JIT
// compiles the live channel's paths only once they run (cold, the watched flood paid for it alone).
const WARM_EVENTS = 50_000;

/**
 * Child side: opens `count` sockets to `url` (each with `&execution=<own[i]>` added when `own` is
 * given: a target of its own), prints "ready" once all are, then counts frames and lagged notices
 * until told to stop.
 */
async function runWatchers(url: string, count: number, own: string[] = []): Promise<void> {
  setTimeout(() => process.exit(3), DEADLINE_MS);
  let ready = 0;
  let frames = 0;
  let lagged = 0;
  for (let i = 0; i < count; i++) {
    const socket = new WebSocket(own.length > 0 ? `${url}&execution=${own[i]}` : url);
    socket.onmessage = (message) => {
      const text = String(message.data);
      if (text.startsWith('{"type":"stream.ready"')) {
        if (++ready === count) console.log("ready");
      } else if (text.startsWith('{"type":"stream.lagged"')) lagged++;
      else frames++;
    };
  }
  process.stdin.on("data", () => {
    console.log(JSON.stringify({ frames, lagged }));
    process.exit(0);
  });
}

/** One flood of WARM_EVENTS with one watcher (in this process) following it to its end. */
async function warmUp(url: string): Promise<void> {
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}/events`);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.onmessage = (message) => {
        if (String(message.data).startsWith('{"type":"stream.ready"')) resolve();
      };
      socket.onerror = () => reject(new Error("warm-up watcher failed"));
    });
    const ended = new Promise<void>((resolve) => {
      socket.onmessage = (message) => {
        const text = String(message.data);
        if (text.includes('"execution.completed"') || text.startsWith('{"type":"stream.lagged"')) resolve();
      };
    });
    await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: WARM_EVENTS } }) });
    await Promise.race([ended, new Promise((r) => setTimeout(r, DEADLINE_MS))]);
  } finally {
    socket.close();
  }
}

/** Starts `input` of executions.demonstrate on the server; its id. */
async function demonstrate(url: string, input: Record<string, unknown>, session_key?: string): Promise<string> {
  const answer = await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "executions.demonstrate", input, ...(session_key ? { session_key } : {}) }) });
  if (answer.status !== 200) throw new Error(`executions.start answered ${answer.status}: ${await answer.text()}`);
  return ((await answer.json()) as { execution: { id: string } }).execution.id;
}

/**
 * One flooding execution's own duration (engine time, start → completed) emitting `events`, with
 * `watchers` clients following everything (`query`: how they connect) — or, `distinct`, each
 * following the flood and an execution of its own: as many different targets as watchers. The
 * flood then waits in its session behind a pause until they are connected (its duration counts
 * from its start, not its wait), with or without watchers alike.
 */
async function floodWith(watchers: number, events: number, query = "", distinct = false): Promise<{ ms: number; frames: number; lagged: number }> {
  const root = mkdtempSync(join(tmpdir(), "docket-bench-watchers-"));
  const server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: () => {} });
  await warmUp(server.url);
  const flood = { steps: 0, delay_ms: 0, events };
  let floodId: string | null = null;
  let pause: string | null = null;
  const own: string[] = [];
  if (distinct) {
    for (let i = 0; i < watchers; i++) own.push(await demonstrate(server.url, { steps: 0, delay_ms: 0 }));
    pause = await demonstrate(server.url, { steps: 1, delay_ms: 60_000 }, "bench-watchers");
    floodId = await demonstrate(server.url, flood, "bench-watchers");
  }
  const target = distinct ? `/events?execution=${floodId}` : `/events${query}`;
  const child = watchers > 0 ? spawn(process.execPath, [import.meta.path, "--watchers", `${server.url.replace(/^http/, "ws")}${target}`, String(watchers), own.join(",")], { stdio: ["pipe", "pipe", "inherit"] }) : null;
  const lines: string[] = [];
  let wake: (() => void) | null = null;
  child?.stdout!.on("data", (chunk) => {
    lines.push(...String(chunk).split("\n").filter(Boolean));
    wake?.();
  });
  const nextLine = async () => {
    while (lines.length === 0) await new Promise<void>((r) => (wake = r));
    return lines.shift()!;
  };
  try {
    if (child && (await nextLine()) !== "ready") throw new Error("watchers not ready");
    if (pause !== null) {
      const cancelled = await fetch(`${server.url}/api/v1/executions/cancel`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ id: pause }) });
      if (cancelled.status !== 200) throw new Error(`executions.cancel answered ${cancelled.status}`);
    }
    const execution = { id: floodId ?? (await demonstrate(server.url, flood)) };
    const until = Date.now() + DEADLINE_MS;
    for (;;) {
      const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${execution.id}`)).json()) as { state: string; duration_ms: number | null };
      if (snapshot.duration_ms !== null && ["succeeded", "failed", "cancelled"].includes(snapshot.state)) {
        let seen = { frames: 0, lagged: 0 };
        if (child) {
          child.stdin!.write("stop\n");
          seen = JSON.parse(await nextLine());
        }
        return { ms: snapshot.duration_ms, ...seen };
      }
      if (Date.now() > until) throw new Error("the flooding execution did not finish in time");
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    child?.kill("SIGKILL");
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The bench: the same flood with none and with WATCHERS watchers, median of 3 each, as a ratio;
 * once with EVENTS events and once with four times as many. The longer flood is the honest one:
 * 50,000 events end before most watchers' buffers fill, so it hides what watchers that fell
 * behind cost the main thread once they have.
 */
export async function benchWatchers(): Promise<BenchResult> {
  const rows: BenchResult["rows"] = [];
  // The same flood again with watchers that connected as a reconnect does (`?after=`): they once
  // kept a store subscription each for their whole life.
  // And with each watcher following something of its own besides the flood: as many different
  // targets as watchers, which once cost the producer a step per target.
  for (const [events, query] of [[EVENTS, ""], [EVENTS * 4, ""], [EVENTS * 4, "?after=1"], [EVENTS * 4, "distinct"]] as const) {
    const none: number[] = [];
    const many: number[] = [];
    let seen = { frames: 0, lagged: 0 };
    for (let i = 0; i < 3; i++) {
      const distinct = query === "distinct";
      none.push((await floodWith(0, events, "", distinct)).ms);
      const watched = await floodWith(WATCHERS, events, distinct ? "" : query, distinct);
      many.push(watched.ms);
      seen = watched;
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
    rows.push({
      pipeline: `one execution emitting ${events.toLocaleString("en-US")} events, engine time (default flags, memory store; each server warmed by a ${WARM_EVENTS.toLocaleString("en-US")}-event flood with one watcher)${query === "distinct" ? ", each watcher on /events?execution=<the flood>&execution=<one of its own>: 250 different targets" : query ? `, watchers on /events${query}` : ""}`,
      "no watcher ms": median(none),
      [`${WATCHERS} watchers ms`]: median(many),
      "ratio (goal ≤ 2)": median(many) / median(none),
      // Counted until the flood's execution ended (what the goal times), not until the watchers caught up.
      "frames the watchers had seen when it ended (last run)": seen.frames,
      "lagged notices by then (last run)": seen.lagged,
    });
  }
  return { name: "watchers", rows };
}

if (process.argv[2] === "--watchers") await runWatchers(process.argv[3]!, Number(process.argv[4]), process.argv[5] ? process.argv[5].split(",") : []);
else if (import.meta.main) console.log(JSON.stringify(await benchWatchers(), null, 2));

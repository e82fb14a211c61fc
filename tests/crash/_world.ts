// A checkout served by the real compiled binary on the sqlite store, the clients a crash
// schedule drives against it, and what each of them was shown (see docs/durability.md).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { spawnDocket, fromBinary, tempCheckout, watchStream, writeFiles } from "../cli/_harness.ts";

/** Records each run of the handler in `runs.log` (one line: execution id, run_id), then floods events. */
export const CRASH_WRITE = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";

export default capability({
  id: "crash.write",
  title: "Crash write",
  description: "Records that it ran, then reports as many events as asked, a little at a time.",
  effect: "write",
  cancellable: true,
  input: v.object({ events: v.number(), tag: v.string(), hold_ms: v.optional(v.number(), 0) }),
  output: v.object({ events: v.number() }),
  async handler(input, ctx) {
    appendFileSync(join(ctx.root, "runs.log"), (ctx.execution?.id ?? "-") + " " + (ctx.execution?.run_id ?? "-") + "\\n");
    for (let i = 0; i < input.events; i++) {
      ctx.progress.progress(i + 1, input.events, "event " + i);
      if (i % 40 === 39) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
      }
    }
    for (let waited = 0; waited < input.hold_ms; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
    }
    return { events: input.events };
  },
});
`;

/** Reports 1,000 steps whose titles are 1 MB each: an execution far larger than any bound. */
export const CRASH_BIG = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "crash.big",
  title: "Crash big",
  description: "Reports 1,000 steps titled with 1 MB each.",
  effect: "write",
  input: v.object({}),
  output: v.object({ steps: v.number() }),
  async handler(_input, ctx) {
    const title = "t".repeat(1024 * 1024);
    for (let i = 0; i < 1000; i++) {
      ctx.progress.step("s" + i, i + " " + title);
      if (i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return { steps: 1000 };
  },
});
`;

/** One execution's event as a client was shown it. */
export type ShownEvent = { execution_id: string; sequence: number; [key: string]: unknown };

/** Everything clients were shown in one schedule, and what they asked for. */
export interface Shown {
  /** `execution_id#sequence` → the event as shown (the first time; every later showing must be equal). */
  events: Map<string, ShownEvent>;
  /** Snapshots shown (start answers, reads): id, state and the sequence it was at. */
  snapshots: Array<{ id: string; state: string; last_sequence: number; where: string }>;
  /** States shown without a sequence (cancel receipts). */
  states: Array<{ id: string; state: string }>;
  /** run_id → the execution a start answer gave for it. */
  runs: Map<string, string>;
  /** Every run_id sent, answered or not, with its input. */
  sent: Map<string, { events: number; tag: string }>;
  /** Showings that contradicted an earlier one during the schedule itself. */
  conflicts: string[];
}

export function emptyShown(): Shown {
  return { events: new Map(), snapshots: [], states: [], runs: new Map(), sent: new Map(), conflicts: [] };
}

/** Notes an event a client was shown; a second showing of the same sequence must be the same event (members in any order). */
export function noteEvent(shown: Shown, event: ShownEvent): void {
  const key = `${event.execution_id}#${event.sequence}`;
  const earlier = shown.events.get(key);
  if (earlier === undefined) shown.events.set(key, event);
  else if (!Bun.deepEquals(earlier, event, true)) shown.conflicts.push(`${key} shown as two different events`);
}

/** A running `docket serve` of the world. */
export interface Served {
  url: string;
  pid: number;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/** A checkout with the crash capability, served and killed and served again by one binary. */
export class World {
  readonly root: string;
  /** Executions that ran and were read back finished (see check): they cannot change any more. */
  readonly settledRuns = new Set<string>();
  /** `root`: where the checkout is made (a small disk); default a fresh temporary one. */
  constructor(readonly binary: string, root?: string) {
    this.root = root ?? tempCheckout();
    writeFiles(this.root, { "capabilities/crash.write.ts": CRASH_WRITE, "capabilities/crash.big.ts": CRASH_BIG });
  }

  /** Starts `docket serve` on the sqlite store, with `flags` too; resolves once it serves. */
  async serve(flags: string[] = []): Promise<Served> {
    const child = spawnDocket(fromBinary(this.binary), ["serve", "--port", "0", "--max-concurrent", "2", ...flags], { cwd: this.root });
    const stderr = watchStream(child.stderr);
    void new Response(child.stdout).text();
    const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/).catch(async (error) => {
      child.kill("SIGKILL");
      throw error;
    });
    const url = banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    return {
      url,
      pid: child.pid,
      async kill() {
        child.kill("SIGKILL");
        await child.exited;
      },
      async stop() {
        child.kill("SIGINT");
        await child.exited;
      },
    };
  }

  /** How often each run_id's handler ran, and each execution's, from `runs.log`. */
  runCounts(): { byRunId: Map<string, number>; byExecution: Map<string, number> } {
    let text = "";
    try {
      text = readFileSync(join(this.root, "runs.log"), "utf8");
    } catch {
      // Nothing ran yet.
    }
    const byRunId = new Map<string, number>();
    const byExecution = new Map<string, number>();
    for (const line of text.split("\n")) {
      if (line === "") continue;
      const [id, runId] = line.split(" ");
      byExecution.set(id!, (byExecution.get(id!) ?? 0) + 1);
      if (runId !== "-") byRunId.set(runId!, (byRunId.get(runId!) ?? 0) + 1);
    }
    return { byRunId, byExecution };
  }
}

/** POSTs to a plane capability; the answer's JSON, or null when there was no whole 200 answer. */
export async function post(url: string, capability: string, body: unknown): Promise<any | null> {
  try {
    const response = await fetch(`${url}/api/v1/${capability.replace(".", "/")}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    if (response.status !== 200) {
      await response.text();
      return null;
    }
    return await response.json();
  } catch {
    return null;
  }
}

/** GETs a plane capability; the answer's JSON, or null when there was no whole 200 answer. */
export async function get(url: string, capability: string, query: Record<string, string | number>): Promise<any | null> {
  try {
    const params = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
    const response = await fetch(`${url}/api/v1/${capability.replace(".", "/")}?${params}`);
    if (response.status !== 200) {
      await response.text();
      return null;
    }
    return await response.json();
  } catch {
    return null;
  }
}

/** Opens a live-channel client on every execution (live only); each event frame it gets is shown (and counted by `onFrame`). */
export function openLive(url: string, shown: Shown, onFrame: () => void = () => {}): { close(): void } {
  let socket: WebSocket | null = null;
  try {
    socket = new WebSocket(`${url.replace(/^http/, "ws")}/events`);
    socket.onmessage = (message) => {
      const frame = JSON.parse(String(message.data));
      if (typeof frame.execution_id === "string" && typeof frame.sequence === "number") {
        noteEvent(shown, frame);
        onFrame();
      }
    };
    socket.onerror = () => {};
  } catch {
    socket = null;
  }
  return {
    close() {
      try {
        socket?.close();
      } catch {
        // Already gone with the server.
      }
    },
  };
}

// What one large input costs everyone else (docs/limits.md, "What a large input costs the
// server"): a `docket serve` (default flags, sqlite store) is sent one input near input_bytes
// (8 MiB) of each shape below as `POST executions.start` of bench.take, while a second client
// asks `GET /healthz` every 5 ms; the row is the longest any of those waited, from the POST until
// the execution completed. Beside it, in the same run: the floor, a bare Bun.serve doing only
// what cannot be avoided with the same body (parsed once on the main thread, its text parsed again
// by a worker: bench/peers/large-input-floor.ts). Loopback only; every loop bounded.
import { join } from "node:path";
import { serveChild } from "./http-dispatch.ts";
import type { BenchResult } from "./run.ts";

/** Each shape's input, as JSON, of about 4–8 MB: under the default input_bytes. */
const SHAPES: Array<[string, () => unknown]> = [
  ["a million numbers in one array", () => Array.from({ length: 1_000_000 }, (_, i) => i)],
  ["400,000 strings in one array", () => Array.from({ length: 400_000 }, (_, i) => `s${i}`)],
  ["450,000 members in one object", () => Object.fromEntries(Array.from({ length: 450_000 }, (_, i) => [`k${i}`, i]))],
  ["32,000 arrays nested 120 deep", () => Array.from({ length: 32_000 }, () => nested(120))],
];
const PING_MS = 5;
const DEADLINE_MS = 60_000;
const ROUNDS = Number(process.env.DOCKET_BENCH_ROUNDS ?? 3);
const FLOOR = join(import.meta.dir, "peers", "large-input-floor.ts");

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/**
 * Runs `work` while pinging `/healthz` of `url` every PING_MS; the longest a ping waited, and how
 * long `work` took (ms).
 */
async function whilePinging(url: string, work: () => Promise<void>): Promise<{ worst_ms: number; work_ms: number }> {
  let worst = 0;
  let stop = false;
  const pinger = (async () => {
    const until = performance.now() + DEADLINE_MS;
    while (!stop && performance.now() < until) {
      const began = performance.now();
      await (await fetch(`${url}/healthz`)).arrayBuffer();
      worst = Math.max(worst, performance.now() - began);
      await Bun.sleep(PING_MS);
    }
  })();
  await Bun.sleep(100);
  const began = performance.now();
  try {
    await work();
  } finally {
    stop = true;
    await pinger;
  }
  return { worst_ms: worst, work_ms: performance.now() - began };
}

/** docket: the start, then its events after `execution.created` (which holds the input) until completed. */
async function docketStart(url: string, body: string): Promise<void> {
  const answer = await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body });
  const text = await answer.text();
  if (answer.status !== 200) throw new Error(`executions.start answered ${answer.status}: ${text.slice(0, 300)}`);
  const id = (JSON.parse(text) as { execution: { id: string } }).execution.id;
  const until = performance.now() + DEADLINE_MS;
  while (performance.now() < until) {
    const page = (await (await fetch(`${url}/api/v1/executions/events?id=${id}&after=1`)).json()) as { events: Array<{ type: string; data: { state?: string } }> };
    const end = page.events.find((event) => event.type === "execution.completed");
    if (end) {
      if (end.data.state !== "succeeded") throw new Error(`bench.take ended ${end.data.state}: ${JSON.stringify(end.data).slice(0, 300)}`);
      return;
    }
    await Bun.sleep(20);
  }
  throw new Error(`bench.take did not complete within ${DEADLINE_MS / 1000} s`);
}

async function floorCall(url: string, body: string): Promise<void> {
  const answer = await fetch(`${url}/`, { method: "POST", headers: { "content-type": "application/json" }, body });
  if (answer.status !== 200) throw new Error(`the floor answered ${answer.status}`);
  await answer.arrayBuffer();
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

export async function benchLargeInputs(): Promise<BenchResult> {
  const rows: BenchResult["rows"] = [];
  for (const [shape, make] of SHAPES) {
    const body = JSON.stringify({ capability: "bench.take", input: { data: make() } });
    const docket: number[] = [];
    const floor: number[] = [];
    const took: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // A fresh server each round: the sqlite store of the one before holds its inputs.
      const server = await serveChild("sqlite");
      try {
        const run = await whilePinging(server.url, () => docketStart(server.url, body));
        docket.push(run.worst_ms);
        took.push(run.work_ms);
      } finally {
        await server.stop();
      }
      const bare = await serveChild({ script: FLOOR });
      try {
        floor.push((await whilePinging(bare.url, () => floorCall(bare.url, body))).worst_ms);
      } finally {
        await bare.stop();
      }
    }
    rows.push({
      input: `${shape} (${(body.length / 1e6).toFixed(1)} MB of JSON)`,
      flags: `docket serve --store sqlite, defaults otherwise; /healthz every ${PING_MS} ms; median of ${ROUNDS} rounds, a fresh server each`,
      docket_worst_healthz_ms: median(docket),
      start_to_completed_ms: median(took),
      floor_worst_healthz_ms: median(floor),
      floor_is: "bare Bun.serve: the body parsed once, its text parsed again by a worker (bench/peers/large-input-floor.ts)",
      ratio: median(docket) / median(floor),
    });
  }
  return { name: "large-inputs", rows };
}

if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  console.log(markdownTable((await benchLargeInputs()).rows));
  process.exit(0);
}

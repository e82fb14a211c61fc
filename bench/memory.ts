// Memory per retained finished execution (issue 11, item 4): what the memory store and the sqlite
// store keep in the process for each finished execution of 20 events, beside what Redis keeps
// for a BullMQ job holding the same data, in the same run.
//
// Each docket row runs in a child process of its own, so that it starts from a clean heap and
// nothing another row left behind is counted. `DOCKET_BENCH_MEMORY_N` sets how many executions
// (and jobs) are retained; `DOCKET_BENCH_MEMORY_PROFILE=1` adds the object types whose counts grew
// the most (bun:jsc heapStats) to each docket row.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BenchResult } from "./run.ts";
import { redisMissing, startRedis } from "./_redis.ts";

const N = Number(process.env.DOCKET_BENCH_MEMORY_N ?? 60_000);
/**
 * What settles first (worker heaps, allocator pools, the JIT) is not what one more execution
 * costs: a quarter of N runs before the first point; the rest runs in SLICES slices, measured
 * after each, and the cost per execution is the Theil–Sen slope through those points (the median
 * of the slopes between every two of them: one point caught in a step of RSS does not move it).
 */
const SLICES = 10;
/**
 * Resident memory right after a burst of work still holds its garbage: free pages the allocators
 * give back a moment later, worker heaps that collect when idle (measured: 30–70 MB more than a
 * second later, varying from run to run, which made the RSS slope swing 0.6–1.6× Redis's). Each
 * point waits until RSS stops falling (by less than SETTLED_FRACTION over SETTLE_POLL_MS, at most
 * SETTLE_MAX_MS), then takes the median of SAMPLES readings. Redis is measured the same way.
 */
const SETTLE_POLL_MS = 250;
const SETTLED_FRACTION = 0.002;
const SETTLE_MAX_MS = 5000;
const SAMPLES = 5;
const IN_FLIGHT = 64;
const WARM = 200;
const FIXTURE = join(import.meta.dir, "fixtures", "bench.twenty.ts");
const INPUT = { path: "src/modules", pattern: "**/*.ts" };
/**
 * The limits that keep every execution: none is forgotten while the N finish. Bytes too: 60,000
 * executions of 20 events hold ~200 MB of events, near executions_retained_bytes' default.
 */
const LIMIT_OVERRIDES = { max_queued: 100_000, executions_retained: 1_000_000, executions_retained_bytes: 4096 * 1024 * 1024 };
const FLAGS = "--executions-retained 1000000 --executions-retained-bytes 4294967296 --max-queued 100000, other limits default";

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The Theil–Sen slope of the points' y over their x: the median of the slopes of every pair. */
function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const slopes: number[] = [];
  for (let i = 0; i < points.length; i++) for (let j = i + 1; j < points.length; j++) slopes.push((points[j]![1] - points[i]![1]) / (points[j]![0] - points[i]![0]));
  return median(slopes);
}

/** Resident memory once settled (see SETTLE_POLL_MS): the median of SAMPLES readings of `read`. */
async function settledReading(read: () => Promise<number>): Promise<number> {
  const deadline = Date.now() + SETTLE_MAX_MS;
  let before = await read();
  for (;;) {
    await Bun.sleep(SETTLE_POLL_MS);
    const now = await read();
    const settled = now > before * (1 - SETTLED_FRACTION);
    before = now;
    if (settled || Date.now() > deadline) break;
  }
  const samples = [before];
  while (samples.length < SAMPLES) {
    await Bun.sleep(100);
    samples.push(await read());
  }
  return median(samples);
}

/** Runs `slices` slices of `perSlice` through `run`, measuring before the first and after each. */
async function measuredSlices<T>(perSlice: number, run: (n: number) => Promise<void>, measure: () => Promise<T>): Promise<Array<[number, T]>> {
  const points: Array<[number, T]> = [[0, await measure()]];
  for (let k = 1; k <= SLICES; k++) {
    await run(perSlice);
    points.push([k * perSlice, await measure()]);
  }
  return points;
}

/** What a child reports: bytes added per retained execution, and where they went. */
interface ChildFigures {
  events: number;
  rssPerExecution: number;
  heapPerExecution: number;
  grownTypes?: string;
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(2)} KiB`;

/** In the child: boots a plane on `storeKind`, retains N finished executions, prints ChildFigures as JSON. */
async function measureInChild(storeKind: "memory" | "sqlite", count: number): Promise<void> {
  const { bootPlane } = await import("../runtime/boot.ts");
  const { resolveLimits } = await import("../runtime/execution/limits.ts");
  const { settled } = await import("../runtime/execution/settled.ts");
  const { heapStats } = await import("bun:jsc");
  // Each start with ids of its own, as an HTTP request has (a request id, a W3C trace id).
  const edge = () => ({ actor: { kind: "cli", pid: process.pid } as const, request_id: `r-${randomBytes(10).toString("hex")}`, trace_id: randomBytes(16).toString("hex") });
  // The sqlite store writes .docket/state.db under its checkout: a folder of its own, removed after.
  const cwd = mkdtempSync(join(tmpdir(), "docket-bench-memory-"));
  const plane = await bootPlane({ cwd, storeKind, limits: resolveLimits({ overrides: LIMIT_OVERRIDES }), files: [FIXTURE], log: () => {} });
  const { engine, store } = plane;
  const runAll = async (n: number) => {
    for (let done = 0; done < n; done += IN_FLIGHT) {
      const wave = Array.from({ length: Math.min(IN_FLIGHT, n - done) }, () => settled(store, engine.start({ capability: "bench.twenty", input: INPUT }, edge()).execution.id));
      for (const snapshot of await Promise.all(wave)) if (snapshot.state !== "succeeded") throw new Error(`bench.twenty ended ${snapshot.state}: ${snapshot.failure?.message}`);
    }
  };
  const measure = async () => {
    await store.durable();
    // Twice: a collection can free what only the one before it made unreachable.
    Bun.gc(true);
    Bun.gc(true);
    // Gives the allocator's free pages back, as Redis's used_memory leaves them out.
    Bun.shrink();
    const rss = await settledReading(async () => process.memoryUsage().rss);
    const stats = heapStats();
    return { rss, heap: stats.heapSize, types: stats.objectTypeCounts as Record<string, number> };
  };
  try {
    await runAll(WARM + count / 4);
    const perSlice = Math.floor((count * 3) / 4 / SLICES);
    const points = await measuredSlices(perSlice, runAll, measure);
    const last = store.list({ limit: 1 }).items[0]!;
    const figures: ChildFigures = { events: last.last_sequence, rssPerExecution: slope(points.map(([x, m]) => [x, m.rss])), heapPerExecution: slope(points.map(([x, m]) => [x, m.heap])) };
    if (process.env.DOCKET_BENCH_MEMORY_PROFILE === "1") {
      const [[, before], [span, after]] = [points[0]!, points.at(-1)!];
      const grown = Object.entries(after.types).map(([type, n]) => [type, (n - (before.types[type] ?? 0)) / span] as const);
      figures.grownTypes = grown.filter(([, n]) => n >= 0.5).sort((a, b) => b[1] - a[1]).slice(0, 16).map(([type, n]) => `${type} ${n.toFixed(1)}`).join(", ");
    }
    console.log(JSON.stringify(figures));
  } finally {
    await plane.close();
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** Runs one docket measurement in a fresh process and reads its figures. */
function docketRow(storeKind: "memory" | "sqlite"): ChildFigures {
  const child = spawnSync(process.execPath, [import.meta.path, "--child", storeKind, String(N)], { encoding: "utf8", timeout: 600_000, env: process.env });
  const line = child.stdout.trim().split("\n").at(-1) ?? "";
  if (child.status !== 0 || !line.startsWith("{")) throw new Error(`the ${storeKind} child failed (status ${child.status}): ${child.stderr.slice(-2000)}`);
  return JSON.parse(line) as ChildFigures;
}

/**
 * Redis bytes per BullMQ job that holds what a bench.twenty execution holds: its input as the
 * job's data, each of the 17 things the handler reports as a log line (job.log; the progress
 * updates also through job.updateProgress, whose last value the job keeps), its output as the
 * return value, kept after completion.
 */
async function bullmqPerJob(count: number): Promise<{ perJob: number; rssPerJob: number }> {
  const { Queue, Worker } = await import("bullmq");
  const redis = await startRedis();
  const connection = { host: redis.host, port: redis.port, maxRetriesPerRequest: null };
  const queue = new Queue("bench-memory", { connection, defaultJobOptions: { removeOnComplete: false, removeOnFail: false } });
  let completed = 0;
  const worker = new Worker(
    "bench-memory",
    async (job) => {
      const input = job.data as typeof INPUT;
      await job.log(`Scanning ${input.path} for ${input.pattern}`);
      await job.log(`Read the files under ${input.path}`);
      for (let i = 1; i <= 12; i++) {
        const message = `${input.path}/module-${i}.ts read`;
        await job.updateProgress({ current: i, total: 12, message });
        await job.log(message);
      }
      await job.log("12 files read");
      await job.log("12 files, 48213 bytes");
      await job.log("Digest computed");
      return { files: 12, bytes: 48213, digest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" };
    },
    { connection, concurrency: IN_FLIGHT },
  );
  worker.on("completed", () => completed++);
  try {
    const add = async (n: number) => {
      for (let i = 0; i < n; i += 1000) await queue.addBulk(Array.from({ length: Math.min(1000, n - i) }, () => ({ name: "bench.twenty", data: INPUT })));
    };
    const waitFor = async (n: number) => {
      const deadline = Date.now() + 600_000;
      while (completed < n) {
        if (Date.now() > deadline) throw new Error(`BullMQ completed ${completed} of ${n} jobs in 10 minutes`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const client = (await queue.client) as unknown as { info(section: string): Promise<string> };
    const rss = async () => Number(/used_memory_rss:(\d+)/.exec(await client.info("memory"))?.[1] ?? Number.NaN);
    // As on docket's side: warm and a first quarter, then the slope through the slices.
    await add(WARM + count / 4);
    await waitFor(WARM + count / 4);
    const perSlice = Math.floor((count * 3) / 4 / SLICES);
    const run = async (n: number) => {
      const target = completed + n;
      await add(n);
      await waitFor(target);
    };
    const points = await measuredSlices(perSlice, run, async () => ({ rss: await settledReading(rss), used: await redis.usedMemory() }));
    // The peer does the same work: every report of the last job is there to read.
    const [lastJob] = await queue.getCompleted(0, 0);
    const logs = await queue.getJobLogs(lastJob!.id!);
    if (logs.count !== 17 || lastJob!.returnvalue?.files !== 12) throw new Error(`a BullMQ job kept ${logs.count} log lines of 17 and returned ${JSON.stringify(lastJob!.returnvalue)}`);
    return { perJob: slope(points.map(([x, m]) => [x, m.used])), rssPerJob: slope(points.map(([x, m]) => [x, m.rss])) };
  } finally {
    await worker.close();
    await queue.close();
    await redis.stop();
  }
}

/**
 * The memory rows: the memory store and the sqlite store, each beside Redis per BullMQ job. Two
 * measures, each against its like: bytes in use (the JS heap after a full collection; Redis's
 * used_memory) and resident memory (RSS; Redis's used_memory_rss), both as growth over N.
 */
export async function benchMemory(): Promise<BenchResult> {
  const memory = docketRow("memory");
  const sqlite = docketRow("sqlite");
  const missing = redisMissing();
  const redis = missing === null ? await bullmqPerJob(N) : null;
  const row = (store: string, figures: ChildFigures, goal: string) => ({
    figure: `${store} store: per retained finished execution (${figures.events} events; slope over the last ${((N * 3) / 4).toLocaleString("en-US")} of ${N.toLocaleString("en-US")} retained)`,
    heap: kib(figures.heapPerExecution),
    redis_used: redis === null ? missing : kib(redis.perJob),
    ratio_in_use: redis === null ? "" : figures.heapPerExecution / redis.perJob,
    rss: kib(figures.rssPerExecution),
    redis_rss: redis === null ? "" : kib(redis.rssPerJob),
    ratio_rss: redis === null ? "" : figures.rssPerExecution / redis.rssPerJob,
    goal,
    flags: FLAGS,
  });
  const rows: BenchResult["rows"] = [row("memory", memory, "≤ 1.0"), row("sqlite", sqlite, "(reported; the file holds the rest)")];
  rows.push({ figure: "peer: BullMQ job on Redis", heap: "", redis_used: "input as data, 17 job.log lines, 12 updateProgress, return value; removeOnComplete: false" });
  for (const [name, figures] of [["memory", memory], ["sqlite", sqlite]] as const) if (figures.grownTypes) rows.push({ figure: `${name}: object types grown per execution`, heap: figures.grownTypes });
  return { name: "memory", rows };
}

if (import.meta.main) {
  const at = process.argv.indexOf("--child");
  if (at >= 0) {
    await measureInChild(process.argv[at + 1] as "memory" | "sqlite", Number(process.argv[at + 2]));
  } else {
    const { markdownTable } = await import("./run.ts");
    console.log(markdownTable((await benchMemory()).rows));
  }
  process.exit(0);
}

// `docket run` of a no-op capability, compiled, cold process, against the design's floor: a binary
// compiled the same way that starts one worker and round-trips one message (PERFORMANCE.md goal:
// ≤ 1.25 × that floor). `bun` running the same handler as a plain script is shown for reference.
// All are measured in the same run, interleaved, so a busy machine slows them alike.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const RUNS = 10;
const DIST = fileURLToPath(new URL("../dist/docket", import.meta.url));

const NOOP_CAPABILITY = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "bench.noop",
  title: "Nothing",
  description: "Does nothing, for start-up measurements.",
  effect: "read",
  input: v.object({}),
  output: v.object({ ok: v.boolean() }),
  handler() {
    return { ok: true };
  },
});
`;

// The floor: what any worker-based run must pay (binary start, one worker start, one round trip).
const FLOOR_MAIN = `const worker = new Worker(new URL("./floor-worker.ts", import.meta.url).href);
const answer = await new Promise((resolve) => {
  worker.onmessage = (event) => resolve(event.data);
  worker.postMessage({ input: {} });
});
console.log(JSON.stringify(answer, null, 2));
process.exit(0);
`;
const FLOOR_WORKER = `self.onmessage = () => self.postMessage({ ok: true });
`;

// The same handler with nothing around it: what a user would compare docket with.
const PLAIN_SCRIPT = `const handler = () => ({ ok: true });
console.log(JSON.stringify(await handler({}), null, 2));
`;

/** One timed process: wall time from spawn to exit, in milliseconds. */
async function timeOnce(argv: string[], cwd: string, expect: string): Promise<number> {
  const started = performance.now();
  const child = Bun.spawn(argv, { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()]);
  const ms = performance.now() - started;
  if (code !== 0 || !stdout.includes(expect)) throw new Error(`${argv.join(" ")} exited ${code}:\n${stdout}\n${stderr}`);
  return ms;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** The floor binary, compiled with docket's own settings (bytecode, splitting, flat naming). */
async function floorBinary(scratch: string): Promise<string> {
  const { compileDocket } = await import("../scripts/build.ts");
  writeFileSync(join(scratch, "floor-main.ts"), FLOOR_MAIN);
  writeFileSync(join(scratch, "floor-worker.ts"), FLOOR_WORKER);
  const path = join(scratch, "floor");
  await compileDocket({ entrypoints: [join(scratch, "floor-main.ts"), join(scratch, "floor-worker.ts")], outfile: path });
  return path;
}

/** dist/docket when it exists, else a binary compiled for this run into a temporary folder. */
async function binary(scratch: string): Promise<{ path: string; built: boolean }> {
  if (existsSync(DIST)) return { path: DIST, built: false };
  const { compileDocket, CLI_ENTRY, WORKER_ENTRIES } = await import("../scripts/build.ts");
  const path = join(scratch, "docket");
  await compileDocket({ entrypoints: [CLI_ENTRY, ...WORKER_ENTRIES], outfile: path });
  return { path, built: true };
}

/** Median wall time of a cold `docket run` of a no-op file vs `bun` running the same handler. */
export async function benchColdStart(): Promise<{ name: string; rows: Array<Record<string, unknown>> }> {
  const scratch = mkdtempSync(join(tmpdir(), "docket-cold-"));
  try {
    const docket = await binary(scratch);
    // Outside any checkout and any node_modules: the user's case, and nothing else to discover.
    writeFileSync(join(scratch, "bench.noop.ts"), NOOP_CAPABILITY);
    writeFileSync(join(scratch, "plain.ts"), PLAIN_SCRIPT);
    const floor = await floorBinary(scratch);
    const cases = [
      { name: "docket run ./bench.noop.ts (compiled, default flags)", argv: [docket.path, "run", "./bench.noop.ts"], expect: '"ok": true' },
      { name: "floor: compiled binary, one worker, one round trip", argv: [floor], expect: '"ok": true' },
      { name: "bun plain.ts (same handler, no worker)", argv: [process.execPath, "plain.ts"], expect: '"ok": true' },
      { name: "docket --version (compiled; the CLI's floor)", argv: [docket.path, "--version"], expect: "." },
    ];
    const times = cases.map(() => [] as number[]);
    // One untimed round puts every file in the page cache: "cold" is the process, not the disk.
    for (const c of cases) await timeOnce(c.argv, scratch, c.expect);
    for (let i = 0; i < RUNS; i++) {
      for (const [at, c] of cases.entries()) times[at]!.push(await timeOnce(c.argv, scratch, c.expect));
    }
    const floorMs = median(times[1]!);
    const rows = cases.map((c, at) => ({
      case: c.name,
      median_ms: Math.round(median(times[at]!) * 10) / 10,
      min_ms: Math.round(Math.min(...times[at]!) * 10) / 10,
      ratio_vs_floor: Math.round((median(times[at]!) / floorMs) * 100) / 100,
    }));
    rows[0] = { ...rows[0]!, goal: "≤ 1.25 × floor", binary: docket.built ? "compiled for this run" : "dist/docket" } as (typeof rows)[number];
    return { name: `cold start, median of ${RUNS}`, rows };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { name, rows } = await benchColdStart();
  console.log(`## ${name}\n`);
  console.table(rows);
}

// `bun run bench`: every benchmark beside its baseline in the same run, as a table and as JSON.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";

/** What each benchmark module returns. */
export interface BenchResult {
  name: string;
  rows: Array<Record<string, unknown>>;
}

const BENCHES: Array<[string, () => Promise<BenchResult>]> = [
  ["store-append", async () => (await import("./store-append.ts")).benchStoreAppend()],
  ["worker-roundtrip", async () => (await import("./worker-roundtrip.ts")).benchWorkerRoundtrip()],
  ["engine", async () => (await import("./engine.ts")).benchEngine()],
  ["http-dispatch", async () => (await import("./http-dispatch.ts")).benchHttpDispatch()],
  ["live-channel", async () => (await import("./live-channel.ts")).benchLiveChannel()],
  ["memory", async () => (await import("./memory.ts")).benchMemory()],
  ["durable", async () => (await import("./durable.ts")).benchDurable()],
  ["watchers", async () => (await import("./watchers.ts")).benchWatchers()],
  ["stalled", async () => (await import("./stalled.ts")).benchStalled()],
  ["replay", async () => (await import("./replay.ts")).benchReplay()],
  ["large-inputs", async () => (await import("./large-inputs.ts")).benchLargeInputs()],
  ["secret-mask", async () => (await import("./secret-mask.ts")).benchSecretMask()],
  ["cold-start", async () => (await import("./cold-start.ts")).benchColdStart()],
  ["release-binaries", async () => (await import("./release-binaries.ts")).benchReleaseBinaries()],
];

/** The machine the figures came from: they mean nothing without it. */
export function machine() {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model ?? "unknown",
    cores: cpu.length,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform} ${process.arch}`,
    bun: process.versions.bun ?? null,
    date: new Date().toISOString(),
  };
}

/** Prints rows as a Markdown table (what bench/RESULTS.md holds). */
export function markdownTable(rows: Array<Record<string, unknown>>): string {
  if (rows.length === 0) return "(no rows)";
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown) => (typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en-US") : v.toFixed(v < 10 ? 3 : 1)) : String(v ?? ""));
  return [`| ${columns.join(" | ")} |`, `|${columns.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${columns.map((c) => cell(r[c])).join(" | ")} |`)].join("\n");
}

if (import.meta.main) {
  const only = process.argv.slice(2);
  const results: BenchResult[] = [];
  const info = machine();
  console.log(`machine: ${info.cpu}, ${info.cores} cores, ${info.memory_gib} GiB, ${info.platform}, bun ${info.bun}\n`);
  for (const [name, run] of BENCHES) {
    if (only.length && !only.includes(name)) continue;
    try {
      const result = await run();
      results.push(result);
      console.log(`## ${result.name}\n\n${markdownTable(result.rows)}\n`);
    } catch (error) {
      console.log(`## ${name}\n\nFAILED: ${(error as Error).stack ?? error}\n`);
      results.push({ name, rows: [{ error: String((error as Error).message ?? error) }] });
    }
  }
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  const file = join(import.meta.dir, "results", "latest.json");
  writeFileSync(file, JSON.stringify({ machine: info, results }, null, 2));
  console.log(`written: ${file}`);
  process.exit(0);
}

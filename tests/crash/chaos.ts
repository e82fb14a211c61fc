// `bun run chaos [count] [--seed N] [--parallel N]`: the crash-consistency schedules of
// tests/crash (200 in `bun test`), as many as asked (default 10,000), with progress and a summary
// line to record in bench/RESULTS.md.
import { buildBinary, removeTempDirs } from "../cli/_harness.ts";
import { runCrashSchedules } from "./_run.ts";
import { machine } from "../../bench/run.ts";

function option(name: string): number | undefined {
  const at = process.argv.indexOf(name);
  if (at < 0) return undefined;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 0) {
    console.error(`${name} takes a whole number, got ${JSON.stringify(process.argv[at + 1])}.`);
    process.exit(2);
  }
  return value;
}

const positional = process.argv.slice(2).find((arg, i, all) => /^\d+$/.test(arg) && !all[i - 1]?.startsWith("--"));
const count = positional === undefined ? 10_000 : Number(positional);
if (!Number.isSafeInteger(count) || count < 1) {
  console.error(`The count must be a whole number of schedules from 1, got ${JSON.stringify(positional)}. Usage: bun run chaos [count] [--seed N] [--parallel N]`);
  process.exit(2);
}

const info = machine();
console.log(`chaos: ${count} crash schedules on ${info.cpu}, ${info.cores} cores, ${info.memory_gib} GiB, ${info.platform}, bun ${info.bun}`);
try {
  const binary = process.env.DOCKET_CRASH_BINARY ?? (await buildBinary());
  let last = performance.now();
  const report = await runCrashSchedules({
    binary,
    count,
    seed: option("--seed"),
    parallel: option("--parallel"),
    onProgress: (done) => {
      if (performance.now() - last < 10_000 && done !== count) return;
      last = performance.now();
      console.log(`  ${done} / ${count}`);
    },
  });
  console.log(`chaos passed: ${JSON.stringify({ ...report, date: info.date })}`);
} catch (error) {
  console.error(`chaos FAILED: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  removeTempDirs();
}

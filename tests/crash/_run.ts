// Runs crash schedules against one built binary: `bun test` runs a few hundred, `bun run chaos`
// as many as asked (see package.json and bench/RESULTS.md).
import fc from "fast-check";
import { check, drive, ranOnce, schedule, type Schedule } from "./_schedule.ts";
import { World, type Served } from "./_world.ts";

/** How a batch of schedules went. */
export interface CrashReport {
  schedules: number;
  /** Events, snapshots and run ids clients were shown before the kills, all checked after restarts. */
  shownEvents: number;
  shownSnapshots: number;
  answeredRunIds: number;
  kills: number;
  seconds: number;
  seed: number;
}

/** Options of {@link runCrashSchedules}. */
export interface CrashOptions {
  binary: string;
  count: number;
  seed?: number;
  /** A fresh checkout every this many schedules, so that history and replays stay small. */
  perWorld?: number;
  onProgress?: (done: number) => void;
}

/**
 * Runs `count` random schedules, `parallel` chains of them at once (each on its own checkouts:
 * a loaded machine spends most of a schedule waiting for a server to start); throws with the
 * first violation, its schedule and seed.
 */
export async function runCrashSchedules(options: CrashOptions & { parallel?: number }): Promise<CrashReport> {
  const parallel = Math.max(1, Math.min(options.parallel ?? 4, options.count));
  const seed = options.seed ?? (Date.now() ^ (Math.random() * 0x7fffffff)) >>> 0;
  const started = performance.now();
  let done = 0;
  const chains = await Promise.all(
    Array.from({ length: parallel }, (_, i) =>
      runChain({
        ...options,
        count: Math.floor(options.count / parallel) + (i < options.count % parallel ? 1 : 0),
        seed: (seed + i) >>> 0,
        label: `c${i}`,
        onProgress: () => options.onProgress?.(++done),
      }),
    ),
  );
  const sum = (key: keyof CrashReport) => chains.reduce((total, chain) => total + (chain[key] as number), 0);
  return { schedules: sum("schedules"), shownEvents: sum("shownEvents"), shownSnapshots: sum("shownSnapshots"), answeredRunIds: sum("answeredRunIds"), kills: sum("kills"), seconds: (performance.now() - started) / 1000, seed };
}

/**
 * One chain of schedules; throws with the first violation (its schedule and seed). The schedules
 * of one checkout follow each other (the restart after a kill serves the next one), so a failure
 * is reported as it is: shrinking would replay it on another history.
 */
async function runChain(options: CrashOptions & { label: string }): Promise<CrashReport> {
  const perWorld = options.perWorld ?? 25;
  const seed = options.seed!;
  const report: CrashReport = { schedules: 0, shownEvents: 0, shownSnapshots: 0, answeredRunIds: 0, kills: 0, seconds: 0, seed };
  const started = performance.now();
  let world: World | null = null;
  let served: Served | null = null;
  const finishWorld = async () => {
    if (world === null) return;
    await served?.stop();
    const twice = ranOnce(world);
    if (twice.length > 0) throw new Error(`A run happened twice (seed ${seed}):\n${twice.join("\n")}`);
    world = null;
    served = null;
  };
  try {
    await fc.assert(
      fc.asyncProperty(schedule, async (plan: Schedule) => {
        if (world === null) {
          world = new World(options.binary);
          served = await world.serve();
        }
        const n = report.schedules++;
        const shown = await drive(served!, plan, `${options.label}s${n}`);
        report.kills++;
        served = await world.serve();
        const problems = await check(world, served, shown);
        report.shownEvents += shown.events.size;
        report.shownSnapshots += shown.snapshots.length;
        report.answeredRunIds += shown.runs.size;
        if (problems.length > 0) throw new Error(`After the kill of schedule ${n} (${JSON.stringify(plan)}), in ${world.root}:\n${problems.join("\n")}`);
        options.onProgress?.(report.schedules);
        if (report.schedules % perWorld === 0) await finishWorld();
      }),
      { numRuns: options.count, seed, endOnFailure: true },
    );
    await finishWorld();
  } finally {
    await (served as Served | null)?.kill().catch(() => undefined);
  }
  report.seconds = (performance.now() - started) / 1000;
  return report;
}

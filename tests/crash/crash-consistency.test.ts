// The crash-consistency suite (docs/durability.md): random schedules of starts (with and without
// run_id), event floods, cancels, live clients and HTTP readers against the compiled binary on
// the sqlite store, each ended by SIGKILL at a random moment; after the restart, everything any
// client was shown is still there, unchanged, no run_id ran twice, and no handler that ran is
// ended as one that did not start.
import { afterAll, expect, test } from "bun:test";
import { buildBinary, removeTempDirs } from "../cli/_harness.ts";
import { runCrashSchedules } from "./_run.ts";

afterAll(removeTempDirs);

const COUNT = Number(process.env.DOCKET_CRASH_SCHEDULES ?? 200);

test(`crash consistency: ${COUNT} random schedules, each killed (SIGKILL) at a random moment, lose and change nothing any client was shown`, async () => {
  // DOCKET_CRASH_BINARY: another build to hold to the same promise (an older one, to see it fail).
  const binary = process.env.DOCKET_CRASH_BINARY ?? (await buildBinary());
  const report = await runCrashSchedules({ binary, count: COUNT });
  console.log(`crash consistency: ${JSON.stringify(report)}`);
  expect(report.schedules).toBe(COUNT);
  // The schedules did show things to check: starts answered, events delivered. How many events
  // depends on the seed and on how busy the machine is: 628 in one run, 141–198 for seed
  // 152998492, 89 for seed 1707693000 on a machine shared with two other test runs (one event a
  // schedule was asked, and such runs failed for it). What counts is that what was shown held.
  expect(report.shownSnapshots).toBeGreaterThan(COUNT / 2);
  expect(report.shownEvents).toBeGreaterThan(COUNT / 4);
}, 600_000);

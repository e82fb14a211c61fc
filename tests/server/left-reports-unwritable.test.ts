// Reports a run left in .docket/reports/ while the server's store cannot write (checking tester, session 44).
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { leaveReports } from "../../runtime/store/left-reports.ts";
import { takeLeftReports } from "../../runtime/server/serve.ts";
import type { ExecutionPlane } from "../../runtime/execution/plane.ts";
import type { ExecutionReport } from "../../runtime/execution/report-protocol.ts";
import { REPORTED_ID as ID, reportOf } from "../_support/reported-run.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const checkout = () => {
  const root = mkdtempSync(join(tmpdir(), "docket-left-"));
  dirs.push(root);
  return root;
};

test("a left report of an execution the store says ended is not removed while the store cannot write: that end may never reach its file", () => {
  const root = checkout();
  expect(leaveReports(root, ID, [reportOf([]) as unknown as ExecutionReport])).not.toBeNull();
  let fault: { reason: string; since: string } | null = { reason: "state.db was removed", since: new Date(0).toISOString() };
  const plane = { root, store: { storageFault: () => fault, current: () => ({ state: "succeeded" }) } } as unknown as ExecutionPlane;
  takeLeftReports(plane);
  expect(readdirSync(join(root, ".docket", "reports"))).toEqual([`${ID}.json`]);
  // Writable, the end the store holds is its own: the file goes.
  fault = null;
  takeLeftReports(plane);
  expect(readdirSync(join(root, ".docket", "reports"))).toEqual([]);
});

test("a run never leaves its reports through a link put where .docket/ was", () => {
  const root = checkout();
  const outside = checkout();
  symlinkSync(outside, join(root, ".docket"));
  expect(() => leaveReports(root, ID, [reportOf([]) as unknown as ExecutionReport])).toThrow(/is a symbolic link, not a folder/);
  expect(existsSync(join(outside, "reports"))).toBe(false);
});

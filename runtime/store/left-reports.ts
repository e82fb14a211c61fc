import { lstatSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ExecutionReport } from "../execution/report-protocol.ts";
import { replaceWhole } from "./_file-aside.ts";
import { readRegularFileText } from "./regular-file-text.ts";

/**
 * The reports a `docket run` could not deliver at its end (docs/protocol.md, "A run that ends while
 * its server is away"): the server did not answer within the end window, so the run leaves the
 * reports it still owed in `.docket/reports/<execution id>.json` before it exits. A server that
 * finds the run's process gone takes them from there before it judges the run by its silence: a
 * run that succeeded while the server was down or frozen is recorded as it ended, not as a run of
 * unknown outcome — which a rerun with its run_id would answer for ever after.
 */
export function leftReportsDir(root: string): string {
  return join(root, ".docket", "reports");
}

/** An execution id as a file name: docket's ids are made of these characters; another gets none. */
const FILE_SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function leftReportPath(root: string, id: string): string | null {
  return FILE_SAFE_ID.test(id) ? join(leftReportsDir(root), `${id}.json`) : null;
}

/** Leaves `reports` (in order, each one report's body) for `id`: written aside, synced, renamed in whole. Answers the file, or null when the id cannot name one. */
export function leaveReports(root: string, id: string, reports: readonly ExecutionReport[]): string | null {
  const path = leftReportPath(root, id);
  if (path === null) return null;
  const dir = leftReportsDir(root);
  // Never through a link put where .docket/ was: made again through it, the reports (and their
  // folder) landed outside the checkout (checking tester, session 44).
  const docket = join(root, ".docket");
  if (lstatSync(docket, { throwIfNoEntry: false })?.isSymbolicLink()) throw new Error(`${docket} is a symbolic link, not a folder: docket writes nothing through it`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  replaceWhole(path, dir, `${JSON.stringify({ id, reports })}\n`);
  return path;
}

/**
 * The reports left for `id`, as their file holds them (each still to be checked as any report is),
 * or null when none were left (or the name is no file docket can read: a folder, one it may not
 * open). A file that is not what `leaveReports` writes (not JSON, cut short, another shape) holds
 * no report: `[]`, refused and removed like a report that does not check. `leaveReports` renames
 * its files into place whole, so such a file is never one being written. Kept, it was read again
 * at every look, every 5 s, for ever.
 */
export function readLeftReports(root: string, id: string): unknown[] | null {
  const path = leftReportPath(root, id);
  if (path === null) return null;
  let text: string;
  try {
    text = readRegularFileText(path);
  } catch (error) {
    // Too large to be a text at all: no file of docket's either.
    return (error as NodeJS.ErrnoException)?.code === "ERR_STRING_TOO_LONG" ? [] : null;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  const left = value as { id?: unknown; reports?: unknown } | null;
  return left !== null && typeof left === "object" && left.id === id && Array.isArray(left.reports) ? left.reports : [];
}

/**
 * Removes the reports left for `id` (taken, or refused: they would only be refused again). Never
 * throws: what cannot be removed (a folder someone made under that name) is left as it is.
 */
export function removeLeftReports(root: string, id: string): void {
  const path = leftReportPath(root, id);
  try {
    if (path !== null) rmSync(path, { force: true });
  } catch {
    // Not a file docket left: not docket's to remove.
  }
}

/**
 * The executions reports were left for in `root`, by their files' names; with `since` (ms since
 * the epoch), only those whose file was written at or after it.
 */
export function leftReportIds(root: string, since?: number): string[] {
  let names: string[];
  try {
    names = readdirSync(leftReportsDir(root));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const id = name.endsWith(".json") ? name.slice(0, -".json".length) : null;
    if (id === null || !FILE_SAFE_ID.test(id)) return [];
    if (since === undefined) return [id];
    const written = lstatSync(join(leftReportsDir(root), name), { throwIfNoEntry: false })?.mtimeMs;
    return written !== undefined && written >= since ? [id] : [];
  });
}

import { createHash } from "node:crypto";
import { linkSync, lstatSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { ExecutionStore, RunIdentity } from "./store.ts";
import { replaceWhole, syncFolder, writeAside } from "./_file-aside.ts";
import { readRegularFileText } from "./regular-file-text.ts";

/**
 * A run_id used by a `docket run` that found no server (docs/protocol.md, "A run without a
 * server"): its identity, which process ran it, and once over how it ended. One file per run_id in
 * `.docket/runs/`, so that a later run with that run_id — without a server, or through the next
 * server, which records these identities when it starts — is that run and never a second one.
 */
export interface RunMark extends RunIdentity {
  /** The process that runs (or ran) it, and where its pid means something (`ownPidNamespace`). */
  pid: number;
  pid_namespace: string | null;
  /** The process's start time as the kernel counts it (Linux), so that a reused pid is not taken for it. */
  pid_started: string | null;
  started_at: string;
  /** The execution's final snapshot, once it ended; absent while it runs, or for good when its process died first. */
  end?: ExecutionSnapshot;
}

/** The folder of a checkout's marks. */
export function runMarksDir(root: string): string {
  return join(root, ".docket", "runs");
}

/** A run_id's file: named by its hash, since a run_id may be `.` or `..` or hold `:`. */
function markPath(root: string, runId: string): string {
  return join(runMarksDir(root), `${createHash("sha256").update(runId).digest("hex").slice(0, 40)}.json`);
}

/** The mark of `runId`, or null when none was left (or it cannot be read as one: see parseMark). */
export function readRunMark(root: string, runId: string): RunMark | null {
  let text: string;
  try {
    text = readRegularFileText(markPath(root, runId));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  const mark = parseMark(text);
  // Two run_ids whose hashes share their first 160 bits are not expected; a mark is its run_id's only.
  return mark !== null && mark.run_id === runId ? mark : null;
}

/** How many marks the checkout holds (bounded like the server's run identities). */
export function countRunMarks(root: string): number {
  try {
    return readdirSync(runMarksDir(root)).filter((name) => name.endsWith(".json")).length;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
}

/**
 * Every mark of the checkout, for a server starting (serve.ts records their identities). A file
 * that is not a mark (cut short, edited) is skipped and counted: it protects nothing, and it is
 * not the server's to delete.
 */
export function listRunMarks(root: string): { marks: RunMark[]; unreadable: number } {
  const marks: RunMark[] = [];
  let unreadable = 0;
  let names: string[];
  try {
    names = readdirSync(runMarksDir(root)).filter((name) => name.endsWith(".json"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { marks, unreadable };
    throw error;
  }
  for (const name of names) {
    let mark: RunMark | null = null;
    try {
      mark = parseMark(readRegularFileText(join(runMarksDir(root), name)));
    } catch {
      // Gone or unreadable meanwhile: counted as not a mark.
    }
    if (mark === null) unreadable++;
    else marks.push(mark);
  }
  return { marks, unreadable };
}

/**
 * Records in a server's store the identity of every mark left by runs without a server (serve.ts,
 * before the server answers anything): a start or a run with one of those run_ids is then that
 * run, deduplicated (its execution is not the server's: its details count as expired). An identity
 * the store holds already stays as it is. The marks stay: a run with their run_id reads its end there.
 */
export function recordRunMarks(root: string, store: Pick<ExecutionStore, "findRun" | "recordRun">): { recorded: number; full: number; unreadable: number; marks: RunMark[] } {
  const { marks, unreadable } = listRunMarks(root);
  // The marks read: the server answers of their executions from them (server/marked-runs.ts).
  return { ...recordIdentities(store, marks.map((mark) => ({ run_id: mark.run_id, execution_id: mark.execution_id, capability: mark.capability, input_hash: mark.input_hash }))), unreadable, marks };
}

/**
 * Records in a store the identities it does not hold yet (one it holds stays as it is): how many
 * were recorded, and how many could not be, the store's run identities being full.
 */
export function recordIdentities(store: Pick<ExecutionStore, "findRun" | "recordRun">, identities: RunIdentity[]): { recorded: number; full: number } {
  let recorded = 0;
  let full = 0;
  for (const identity of identities) {
    if (store.findRun(identity.run_id) !== null) continue;
    if (store.recordRun(identity)) recorded++;
    else full++;
  }
  return { recorded, full };
}

/**
 * Leaves the mark of a run about to begin, unless one is there: "created" (on disk, its folder
 * synced: a crash after this leaves it), or the mark found. Two runs racing with one run_id: one
 * creates it, the other reads it — the file appears whole under its name (written aside, then
 * linked: a link never replaces a file), never half written.
 */
export function createRunMark(root: string, mark: RunMark): "created" | RunMark {
  const dir = runMarksDir(root);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (lstatSync(dir).isSymbolicLink() || !lstatSync(dir).isDirectory()) throw new Error(`${dir} is not a folder`);
  const aside = writeAside(dir, `${JSON.stringify(mark)}\n`);
  try {
    linkSync(aside, markPath(root, mark.run_id));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const found = readRunMark(root, mark.run_id);
    // Taken by a file that is not its mark (cut short by a crash before the link? never: the link
    // is of a whole file): refused as unreadable by the caller.
    if (found === null) throw new Error(`${markPath(root, mark.run_id)} exists but is not a run mark`);
    return found;
  } finally {
    rmSync(aside, { force: true });
  }
  syncFolder(dir);
  return "created";
}

/** Writes the end of a run into its mark (replaced whole, synced). */
export function endRunMark(root: string, mark: RunMark, end: ExecutionSnapshot): void {
  const dir = runMarksDir(root);
  replaceWhole(markPath(root, mark.run_id), dir, `${JSON.stringify({ ...mark, end })}\n`);
  syncFolder(dir);
}

/** A mark from its file's text, or null when the text is not one (every member checked: it decides whether work runs). */
function parseMark(text: string): RunMark | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const m = value as Record<string, unknown>;
  const strings = ["run_id", "execution_id", "capability", "input_hash", "started_at"] as const;
  if (!strings.every((key) => typeof m[key] === "string")) return null;
  if (!Number.isSafeInteger(m.pid) || (m.pid as number) <= 0) return null;
  if (m.pid_namespace !== null && typeof m.pid_namespace !== "string") return null;
  if (m.pid_started !== null && typeof m.pid_started !== "string") return null;
  if (m.end !== undefined && (typeof m.end !== "object" || m.end === null || typeof (m.end as { state?: unknown }).state !== "string")) return null;
  return value as RunMark;
}

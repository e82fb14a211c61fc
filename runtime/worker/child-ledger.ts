import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { endProcessGroups, signalGroup } from "./process-groups.ts";
import { ensureDocketDir, processStarted } from "../server/lease.ts";

/**
 * The process groups of `ctx.exec` children this process runs, one small file each under
 * `.docket/children/`, so that the next docket of the checkout can end those a killed one left
 * (docs/containment.md, "No child outlives its execution"): a server or a `docket run` killed with
 * SIGKILL runs no code, and its children run on, reparented, while the store says their
 * execution ended. Writing a file per child costs a spawn a few system calls; a ledger that cannot
 * write (a full disk, a read-only checkout) records nothing and fails no spawn.
 */
export interface ChildLedger {
  /** A child group began (its leader's pid is its id). */
  started(pgid: number): void;
  /** A child group ended, or was ended by this process. */
  ended(pgid: number): void;
}

/** What one file holds: the group, its leader's start, and the process that owns it (and when that one started). */
interface ChildRecord {
  pgid: number;
  started: string;
  owner_pid: number;
  owner_started: string;
}

/** A ledger that records nothing: no checkout (a pool in a test), or no /proc to tell a process's start by. */
export const NO_LEDGER: ChildLedger = { started() {}, ended() {} };

/** The folder of a checkout's ledger. */
export function childLedgerDir(root: string): string {
  return join(root, ".docket", "children");
}

/**
 * The ledger of this process in the checkout `root` (`.docket/children/`, made with the first
 * child). Off Linux (no /proc: a process's start cannot be read, so a pid reused since could not
 * be told apart) it records nothing.
 */
export function childLedger(root: string): ChildLedger {
  const ownStarted = processStarted(process.pid);
  if (ownStarted === null) return NO_LEDGER;
  const dir = childLedgerDir(root);
  const file = (pgid: number) => join(dir, `${process.pid}-${pgid}.json`);
  return {
    started(pgid) {
      const started = processStarted(pgid);
      if (started === null) return;
      try {
        // .docket/ as every docket command makes it: never through a link out of the checkout.
        ensureDocketDir(root);
        if (!existsSync(dir)) mkdirSync(dir, { mode: 0o700 });
        const record: ChildRecord = { pgid, started, owner_pid: process.pid, owner_started: ownStarted };
        writeFileSync(file(pgid), JSON.stringify(record), { mode: 0o600 });
      } catch {
        // Not recorded: ended with its execution as ever, only not after this process is killed.
      }
    },
    ended(pgid) {
      rmSync(file(pgid), { force: true });
    },
  };
}

/**
 * Ends the child groups that processes of this checkout which are gone left running (TERM, then
 * KILL after `graceMs`, in the background), and forgets their files; a group whose owner still
 * runs (another `docket run` beside this one) is left alone. Answers the groups it ends.
 */
export function endLeftChildren(root: string, graceMs: number): number[] {
  const dir = childLedgerDir(root);
  let names: string[];
  try {
    // Only a real folder of a real .docket/ (a link committed as .docket is no ledger of ours).
    if (!lstatSync(join(root, ".docket")).isDirectory() || !lstatSync(dir).isDirectory()) return [];
    names = readdirSync(dir).filter((name) => name.endsWith(".json"));
  } catch {
    return [];
  }
  const left: number[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const record = readRecord(path);
    if (record !== null && processStarted(record.owner_pid) === record.owner_started) continue;
    rmSync(path, { force: true });
    if (record === null || !signalGroup(record.pgid, 0)) continue;
    // A leader that still runs must be the one recorded (a pid reused since leads another group);
    // one that exited leaves its group's id reserved while any process of the group remains.
    const leader = processStarted(record.pgid);
    if (leader !== null && leader !== record.started) continue;
    left.push(record.pgid);
  }
  if (left.length > 0) void endProcessGroups(left, graceMs);
  return left;
}

function readRecord(path: string): ChildRecord | null {
  try {
    const value = JSON.parse(readFileSync(path, "utf8")) as Partial<ChildRecord>;
    const ok = Number.isSafeInteger(value.pgid) && Number.isSafeInteger(value.owner_pid) && typeof value.started === "string" && typeof value.owner_started === "string";
    return ok ? (value as ChildRecord) : null;
  } catch {
    return null;
  }
}

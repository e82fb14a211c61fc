import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { endProcessGroups, groupRuns, signalGroup } from "./process-groups.ts";
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

/**
 * What one file holds: the group, its leader's start, and the process that owns it (and when that
 * one started); once a later docket found it left running, when that one first sent it TERM.
 */
interface ChildRecord {
  pgid: number;
  started: string;
  owner_pid: number;
  owner_started: string;
  termed_at?: string;
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
      forget(file(pgid));
    },
  };
}

/** What {@link endLeftChildren} did: groups sent TERM now, and groups sent KILL for outliving their grace since an earlier TERM. */
export interface LeftChildren {
  ending: number[];
  killed: number[];
}

/**
 * Ends the child groups that processes of this checkout which are gone left running: TERM, then
 * KILL once `graceMs` has passed since the first TERM, in the background. A group whose owner
 * still runs (another `docket run` beside this one) is left alone. A group's file is forgotten only
 * once the group is gone or was sent KILL: a short-lived docket (a `docket run` of a second) exits
 * before the grace is over, and a group ignoring TERM must still meet its KILL — from the next
 * docket of the checkout, which reads when the TERM was sent (authoring tester, session 43).
 */
export function endLeftChildren(root: string, graceMs: number, now: () => number = Date.now): LeftChildren {
  const done: LeftChildren = { ending: [], killed: [] };
  const dir = childLedgerDir(root);
  let names: string[];
  try {
    // Only a real folder of a real .docket/ (a link committed as .docket is no ledger of ours).
    if (!lstatSync(join(root, ".docket")).isDirectory() || !lstatSync(dir).isDirectory()) return done;
    names = readdirSync(dir).filter((name) => name.endsWith(".json"));
  } catch {
    return done;
  }
  for (const name of names) {
    const path = join(dir, name);
    // Only docket's own regular files are read (readRecord): a folder, a pipe or a link there (a
    // stray, or planted) is "unreadable" and left as it is — its read would block the start for
    // good or fill memory, its removal throw (checking tester, session 43: every docket of the
    // checkout stopped on a folder d.json).
    const record = readRecord(path);
    // Another user's record (a docket run as root in a checkout handed over since), or one another
    // docket is writing this instant: its group is not known, so it is left for a docket that can
    // read it (checking tester: a root record deleted by nobody's run, its group never killed).
    if (record === "unreadable") continue;
    if (record !== "garbage" && processStarted(record.owner_pid) === record.owner_started) continue;
    // A leader that still runs must be the one recorded (a pid reused since leads another group);
    // one that exited leaves its group's id reserved while any process of the group remains.
    const leader = record === "garbage" ? null : processStarted(record.pgid);
    if (record === "garbage" || !groupRuns(record.pgid) || (leader !== null && leader !== record.started)) {
      forget(path);
      continue;
    }
    // A TERM dated in the future (the clock stepped back since) counts from now, not from then.
    const stamped = record.termed_at === undefined ? Number.NaN : Date.parse(record.termed_at);
    const termed = stamped > now() ? Number.NaN : stamped;
    const left = Number.isFinite(termed) ? termed + graceMs - now() : graceMs;
    if (left <= 0) {
      signalGroup(record.pgid, "SIGKILL");
      forget(path);
      done.killed.push(record.pgid);
      continue;
    }
    if (!Number.isFinite(termed)) rewrite(path, { ...record, termed_at: new Date(now()).toISOString() });
    done.ending.push(record.pgid);
    ending.set(record.pgid, path);
    void endProcessGroups([record.pgid], left).then(() => {
      ending.delete(record.pgid);
      forget(path);
    });
  }
  return done;
}

/** Removes a record; one that cannot be removed (another user's) is looked at again by the next docket. */
function forget(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // Left for the next docket, which finds its group gone.
  }
}

/** The left groups this process sent TERM and has not seen end: group → its record. */
const ending = new Map<number, string>();

/**
 * Forgets the records of the left groups this process is ending that are gone by now: what a
 * process about to exit calls (`docket run`), whose own look at them would come after its exit.
 * Those still running keep their records for the next docket.
 */
export function forgetEndedLeftChildren(): void {
  for (const [pgid, path] of ending) {
    if (groupRuns(pgid)) continue;
    ending.delete(pgid);
    forget(path);
  }
}

/** Best effort: a record that cannot be rewritten is TERMed again by the next docket, its grace counted anew. */
function rewrite(path: string, record: ChildRecord): void {
  try {
    writeFileSync(path, JSON.stringify(record), { mode: 0o600 });
  } catch {
    // A full or read-only disk: the record stays as it was.
  }
}

/** What a record takes at most: a few fields; a larger file is none of docket's. */
const RECORD_BYTES = 4096;

/** A record written this recently and not whole may be one another docket is writing now. */
const WRITING_MS = 2000;

/**
 * A record, or "garbage" (docket's kind of file holding no record: forgotten), or "unreadable"
 * (this user may not open it, or it may be being written: left alone).
 */
function readRecord(path: string): ChildRecord | "garbage" | "unreadable" {
  let fd: number | null = null;
  try {
    // Never through a link, never blocking on a pipe swapped in since the look, never more than a record.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return "unreadable";
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return "unreadable";
    if (stats.size > RECORD_BYTES) return "garbage";
    const bytes = Buffer.alloc(RECORD_BYTES);
    const read = readSync(fd, bytes, 0, RECORD_BYTES, 0);
    let value: Partial<ChildRecord> | null = null;
    try {
      value = JSON.parse(bytes.subarray(0, read).toString("utf8")) as Partial<ChildRecord>;
    } catch {
      value = null;
    }
    const ok = value !== null && Number.isSafeInteger(value.pgid) && Number.isSafeInteger(value.owner_pid) && typeof value.started === "string" && typeof value.owner_started === "string" && (value.termed_at === undefined || typeof value.termed_at === "string");
    if (ok) return value as ChildRecord;
    return Date.now() - stats.mtimeMs < WRITING_MS ? "unreadable" : "garbage";
  } catch {
    return "unreadable";
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

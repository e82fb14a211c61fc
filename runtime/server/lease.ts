import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ownerAdvice } from "../store/owner-advice.ts";
import { readRegularFileText } from "../store/regular-file-text.ts";

/** What `.docket/lease.json` holds: which server serves this checkout (docs/protocol.md). */
export interface Lease {
  url: string;
  pid: number;
  root: string;
  /** The bearer token when the server requires one, so `docket run` can report to it. */
  token: string | null;
  started_at: string;
  /**
   * The server's pid namespace (`ownPidNamespace`), null where there is none or from a server that
   * did not write it: `pid` is looked up only by a process in the same one (`pidVisible`).
   */
  pid_namespace: string | null;
}

/** The lease file of a checkout. */
export function leasePath(root: string): string {
  return join(root, ".docket", "lease.json");
}

/**
 * Creates `<root>/.docket/` (0700: it holds the token, the store and artifacts) with a
 * `.gitignore` holding `*`, so nothing in it is ever committed. A folder made wider by an older
 * version is narrowed.
 *
 * A `.docket` that is a symbolic link (or anything but a folder) is refused before anything is
 * made, narrowed or replaced through it: a link committed to a repository (`.docket -> ..`) would
 * otherwise have any docket command run in a clone write its state, narrow a folder's mode and
 * swap its `types/` folder outside the checkout (docs/durability.md, "Everything under .docket/ is private").
 */
export function ensureDocketDir(root: string): string {
  const dir = join(root, ".docket");
  refuseUnlikeFolder(dir);
  try {
    // Never the checkout's own folder: one moved or deleted under a server was made again at its
    // old path by a lease written back at the wrong moment (checking tester, session 50).
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new DocketDirError(`cannot create ${dir}: the checkout's folder ${root} does not exist (moved or deleted?), and docket does not make it again.`);
    if (code !== "EEXIST") {
      if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") throw error;
      // The runtime says only "EACCES: permission denied, mkdir …": what needs the folder, and the ways out.
      const why = code === "EROFS" ? "the checkout is on a read-only file system" : "this user cannot write to the checkout";
      throw new DocketDirError(`cannot create ${dir} (${code}): ${why}, and docket keeps its lock, its address, its logs and its store there. Run docket as a user who can write to ${root}, or make it writable (docket run of a capability needs no .docket/ unless it has a --run-id).`);
    }
  }
  // Made by someone else between the check and the mkdir: checked again before anything goes in.
  refuseUnlikeFolder(dir);
  try {
    if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
  } catch {
    // Not ours to change (another user's checkout): what is created inside is private anyway.
  }
  const ignore = join(dir, ".gitignore");
  // Written whole or not at all: cut short by a full disk, an empty one would stay and leave
  // `.docket/` to git. Missing (or emptied by an older docket), it is written again next time.
  if (!existsSync(ignore) || statSync(ignore).size === 0) {
    const partial = `${ignore}.${process.pid}.partial`;
    try {
      writeFileSync(partial, "*\n", { mode: 0o600 });
      renameSync(partial, ignore);
    } catch {
      try {
        rmSync(partial, { force: true });
      } catch {
        // Not even looked into (another user's .docket/): the lock says whose it is.
      }
    }
  }
  return dir;
}

/**
 * Why this user cannot write in `.docket/`, when it belongs to another user, with the ways out;
 * "" otherwise (store/owner-advice.ts).
 */
export function docketDirOwnerAdvice(root: string): string {
  const advice = ownerAdvice(join(root, ".docket"));
  return advice === null ? "" : ` ${advice}.`;
}

export class DocketDirError extends Error {
  override readonly name = "DocketDirError";
}

/** Throws DocketDirError when `dir` exists and is not a real folder; nothing when it is one or is missing. */
function refuseUnlikeFolder(dir: string): void {
  let stats;
  try {
    stats = lstatSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (stats.isDirectory()) return;
  if (stats.isSymbolicLink()) {
    let target = "";
    try {
      target = ` (to ${readlinkSync(dir)})`;
    } catch {
      // Gone or unreadable a moment later: named without its target.
    }
    throw new DocketDirError(`${dir} is a symbolic link${target}, not a folder: docket keeps its state, token and editor types there and writes nothing through a link, which could lead out of the checkout. Remove the link (\`rm ${dir}\`; a repository should not commit .docket) and run again; docket makes the folder itself.`);
  }
  throw new DocketDirError(`${dir} is a file, not a folder: docket keeps its state, token and editor types there. Move the file away and run again; docket makes the folder itself.`);
}

/**
 * The checkout's lease, or null when there is none, it is not a lease (a torn or foreign file), or
 * it names another checkout: a lease copied along with a checkout (`cp -a`) names the original's
 * server, which serves none of this copy.
 */
export function readLease(root: string): Lease | null {
  const lease = readLeaseOfAnyRoot(root);
  return lease !== null && lease.root === root ? lease : null;
}

/**
 * The lease in this checkout's `.docket/` whoever's root it names: one naming another path is a
 * copy's (`cp -a`), or this checkout's own server's, still running, after the checkout was moved
 * (`mv`) — readLease takes neither; a server refused by the lock names the second.
 */
export function readLeaseOfAnyRoot(root: string): Lease | null {
  let value: unknown;
  try {
    // Not through a link at .docket: a lease from outside the checkout names no server of its own.
    if (!lstatSync(join(root, ".docket")).isDirectory()) return null;
    // A named pipe there is no lease (readRegularFileText): read plainly, it held the server for good.
    value = JSON.parse(readRegularFileText(leasePath(root)));
  } catch {
    return null;
  }
  const l = value as Partial<Lease> | null;
  if (!l || typeof l.url !== "string" || !Number.isSafeInteger(l.pid) || typeof l.root !== "string" || typeof l.started_at !== "string") return null;
  return { url: l.url, pid: l.pid!, root: l.root, token: typeof l.token === "string" ? l.token : null, started_at: l.started_at, pid_namespace: typeof l.pid_namespace === "string" ? l.pid_namespace : null };
}

/**
 * This process's pid namespace as Linux names it (`pid:[4026531836]`), or null where there is none
 * to read (another OS). Two processes see each other's pids only within one namespace: a
 * `docket run` in a container that shares the host's network but not its pids names a pid the
 * server cannot look up (docs/protocol.md).
 */
export function ownPidNamespace(): string | null {
  try {
    return readlinkSync("/proc/self/ns/pid");
  } catch {
    return null;
  }
}

/**
 * True when the lease's pid names its server in this process too: both are in one pid namespace.
 * In another (a `docket run` in a container that shares the host's network but not its pids), the
 * number names nobody or someone else, and the server is judged by what it answers alone. A lease
 * that names no namespace is looked up only where this process has none either (not Linux): one
 * written by an earlier server cannot say where its pid lives.
 */
export function pidVisible(lease: Lease): boolean {
  return lease.pid_namespace === ownPidNamespace();
}

/**
 * A process's start time as the kernel counts it (/proc/<pid>/stat, field 22), or null: gone, no
 * /proc, or exited and not yet reaped by its parent (a zombie: a server killed under a shell that
 * has not waited for it yet runs nothing).
 */
export function processStarted(pid: number): string | null {
  try {
    // After the command name, which may hold spaces and parentheses: field 3 (the state) is the first after ") ".
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
    return fields[0] === "Z" ? null : (fields[19] ?? null);
  } catch {
    return null;
  }
}

/** True when a process with this pid exists (EPERM: it exists but belongs to someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  // A process killed and not yet reaped by its parent (a zombie) still answers kill(pid, 0), and
  // its port is free for anyone to take: it is dead. Only Linux says so (/proc); elsewhere it counts.
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch (error) {
    // Gone between the two looks (ENOENT where /proc exists); no /proc at all: kill(pid, 0) said alive.
    return !(existsSync("/proc/self/stat") && (error as NodeJS.ErrnoException).code === "ENOENT");
  }
}

/**
 * True when the process the lease names is known to be gone: a server killed (SIGKILL, a crash)
 * leaves its lease behind. A pid this process cannot see (`pidVisible`) is never taken for gone.
 */
export function leaseHolderGone(lease: Lease): boolean {
  return pidVisible(lease) && !isProcessAlive(lease.pid);
}

/**
 * True when the lease's holder is alive and serving: its pid exists AND the server at its URL
 * answers `GET /api/v1/plane` with the same root and that pid (a recycled pid, another server on
 * a reused port, or the new server itself on the port the dead one had, does not count). Bounded
 * by `timeout_ms`. A pid this process cannot see (`pidVisible`) is not looked up: there, the
 * answer alone says — `kill(pid, 0)` in another pid namespace took a serving server for a dead one.
 */
export async function isLeaseLive(lease: Lease, options: { timeout_ms?: number } = {}): Promise<boolean> {
  if (leaseHolderGone(lease)) return false;
  try {
    const response = await fetch(new URL("/api/v1/plane", lease.url), {
      headers: lease.token ? { Authorization: `Bearer ${lease.token}` } : {},
      signal: AbortSignal.timeout(options.timeout_ms ?? 1500),
    });
    if (!response.ok) return false;
    const body = (await response.json()) as { root?: unknown; pid?: unknown };
    return body.root === lease.root && body.pid === lease.pid;
  } catch {
    return false;
  }
}

/**
 * Writes the lease (mode 0600) unless a live server holds it; returns that holder instead.
 * The file appears whole or not at all: written to a temporary name, then linked (fails if a
 * lease exists, so two servers starting at once cannot both win) or, over a stale one, renamed.
 */
export async function acquireLease(lease: Lease): Promise<{ ok: true } | { ok: false; holder: Lease }> {
  const { path, temporary } = writeLeaseAside(lease);
  try {
    try {
      linkSync(temporary, path);
      return { ok: true };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = readLease(lease.root);
    if (holder && (await isLeaseLive(holder))) return { ok: false, holder };
    renameLeaseIntoPlace(temporary, path, " and start again: docket makes the file");
    return { ok: true };
  } finally {
    // Already linked or renamed into place, or left: gone either way.
    rmSync(temporary, { force: true });
  }
}

/** The lease written whole under a temporary name beside its place (mode 0600), `.docket/` made first. */
function writeLeaseAside(lease: Lease): { path: string; temporary: string } {
  ensureDocketDir(lease.root);
  const path = leasePath(lease.root);
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(lease, null, 2)}\n`, { mode: 0o600 });
  } catch (error) {
    rmSync(temporary, { force: true });
    throw leaseUnwritable(path, error);
  }
  return { path, temporary };
}

/** Renames the lease written aside into place; a folder made at its name is said, with the way out (`then`), not a crash's stack. */
function renameLeaseIntoPlace(temporary: string, path: string, then: string): void {
  try {
    renameSync(temporary, path);
  } catch (error) {
    if (!lstatSync(path, { throwIfNoEntry: false })?.isDirectory()) throw error;
    throw new DocketDirError(`cannot write the server's lease ${path}: it is a folder, not the file docket keeps there. Remove it (rm -r ${path})${then}.`);
  }
}

/** Why the lease could not be written, naming the file and what to do; the error's code is kept (a disk refusal is told apart by it). */
function leaseUnwritable(path: string, error: unknown): Error {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const why =
    code === "ENOSPC" || code === "EDQUOT"
      ? `the disk (or the folder's quota) is full (${code}). Free some space on the disk holding ${dirname(path)} and start again`
      : code === "EROFS" || code === "EACCES" || code === "EPERM"
        ? `${code === "EROFS" ? "the disk is read-only" : "this user may not write there"} (${code}). Serve from a checkout this user can write to`
        : `${(error as Error)?.message ?? String(error)}`;
  return Object.assign(new Error(`cannot write the server's lease ${path}: ${why}.`), { code });
}

/** True when `current` is `lease` itself (same pid, url and start). */
function isSameLease(current: Lease | null, lease: Lease): boolean {
  return current !== null && current.pid === lease.pid && current.url === lease.url && current.started_at === lease.started_at;
}

/**
 * Writes a running server's lease again when it is gone: `.docket/` removed under the server
 * (`git clean -fdX`, `rm -rf .docket`) took it, and `docket run` and `docket mcp` then found a
 * lock held with no address and could not report to the server (docs/durability.md). Answers
 * "kept" when the lease in place is this one, "restored" when it was written again, "other"
 * when a live process's lease is there (never overwritten). Throws as acquireLease does when it
 * cannot be written (a full disk, a read-only folder).
 */
export function restoreLease(lease: Lease): "kept" | "restored" | "other" {
  const current = readLease(lease.root);
  if (isSameLease(current, lease)) return "kept";
  if (current !== null && current.pid !== lease.pid && (!pidVisible(current) || isProcessAlive(current.pid))) return "other";
  const { path, temporary } = writeLeaseAside(lease);
  try {
    renameLeaseIntoPlace(temporary, path, ": docket writes the file again by itself");
    return "restored";
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** Removes the lease only if it is still this one (same pid, url and start): never another server's. */
export function releaseLease(lease: Lease): boolean {
  if (!isSameLease(readLease(lease.root), lease)) return false;
  try {
    unlinkSync(leasePath(lease.root));
    return true;
  } catch {
    return false;
  }
}

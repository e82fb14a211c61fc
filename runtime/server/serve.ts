import { randomBytes } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import type { ExecutionPlane } from "../execution/plane.ts";
import { bootPlane, type BootOptions } from "../boot.ts";
import { findCheckoutRoot } from "../capability/checkout.ts";
import type { Limits } from "../execution/limits.ts";
import type { PathLook } from "../capability/path-looks.ts";
import type { CatalogChange } from "../capability/live-catalog.ts";
import type { WatchFoldersOptions } from "../capability/watch-folders.ts";
import { loadErrorLine, lookalikeLine, watchCapabilities } from "../capability/watch-capabilities.ts";
import type { ServerConfig } from "./_app-env.ts";
import type { RunningServer } from "./_listen.ts";
import { createApp, type AppMounts } from "./app.ts";
import { LiveChannel } from "./live-channel.ts";
import type { LiveClock } from "./live-socket.ts";
import { acquireLease, ensureDocketDir, isLeaseLive, leaseHolderGone, leasePath, ownPidNamespace, readLease, readLeaseOfAnyRoot, releaseLease, restoreLease, type Lease } from "./lease.ts";
import { openLogFile, teeLog, type LogFile } from "./log-file.ts";
import { lockCheckout, type CheckoutLock } from "./checkout-lock.ts";
import { recordIdentities, recordRunMarks } from "../store/run-marks.ts";
import { markedRunLookup } from "./marked-runs.ts";
import { leftReportIds, removeLeftReports } from "../store/left-reports.ts";
import type { Engine } from "../execution/engine.ts";
import { isTerminal } from "../execution/state-machine.ts";
import { storedRunIdentities } from "../store/stored-run-identity.ts";
import type { ExecutionStore, RunIdentity } from "../store/store.ts";
import { capabilityPost } from "./capability-post.ts";
import { largeAnswers } from "./large-answers.ts";
import { requestBodies } from "./request-bodies.ts";
import { isLocalhostName } from "./own-origin.ts";

/** What the server needs of a booted plane (runtime/boot.ts's `bootPlane` gives more). */
export interface ServedPlane {
  root: string;
  engine: ExecutionPlane;
  close(): Promise<void>;
  /** Loads the capability folders again and swaps the registry whole; absent: no live reload. */
  reload?(): Promise<CatalogChange>;
  /** The folders to watch for `reload`. */
  watchedFolders?: string[];
  /** Those folders as they were just before the first read (a change since is reloaded). */
  watchedLook?: PathLook[];
  /** When that first read began (Date.now()). */
  firstReadAt?: number;
  /** The folders of the local modules the capabilities import (watched too), as of the last load. */
  sourceFolders?(): string[];
}

/** Options of {@link startServer}. */
export interface ServeOptions {
  cwd: string;
  /** Default 127.0.0.1. Anything but a loopback address requires a token (generated when not given). */
  host?: string;
  /** Default 4700; 0 picks a free port. */
  port?: number;
  /**
   * The checkout's lock, taken already (`docket serve` takes it before it loads the server's
   * modules: a `docket run` started beside it then finds the server there); null when it could
   * not be had (another server holds it). Absent: taken here.
   */
  lock?: CheckoutLock | null;
  storeKind: "memory" | "sqlite";
  limits: Limits;
  capabilityDirs: string[];
  /** Host names accepted besides IP literals and localhost (DNS-rebinding guard); never `localhost` or a name under it. */
  allowedHosts?: string[];
  token?: string | null;
  runtime: "bun" | "node";
  /** One line at a time, for stderr. */
  log: (line: string) => void;
  /** Also keep every line of `log` in `<root>/.docket/logs/server.log`, rotated (docs/logging.md); default true. */
  logFile?: boolean;
  /** The worker entry for the pool; the Node bundle passes its bundled worker file. */
  workerUrl?: URL;
  /** Loads a user capability file (the Bun entry registers the "docket"/"valibot" modules first). */
  importFile?: (absPath: string) => Promise<unknown>;
  /** Boots the plane; default `bootPlane` of runtime/boot.ts. Tests may pass their own. */
  boot?: (options: BootOptions) => Promise<ServedPlane>;
  /** Builds the sub-apps mounted at /cockpit and /mcp once the plane is booted (they project it too). */
  mounts?: (plane: ExecutionPlane, live: LiveChannel, log: (line: string) => void) => AppMounts;
  liveClock?: LiveClock;
  /** Seconds a silent connection stays open (default 10 s; on Node, how long a request's head may take). See ListenOptions. */
  idleTimeoutSeconds?: number;
  /** Watch the capability folders and reload on a change (default true; `--no-watch`). */
  watch?: boolean;
  /** Options of the folder watch (debounce, clock), for tests. */
  watchOptions?: WatchFoldersOptions;
  /** How often the server looks that its lease is still in place (default LEASE_LOOK_MS); tests shorten it. */
  leaseLookMs?: number;
  /**
   * Called once when the checkout's folder is found moved, renamed or deleted (watchLease): `docket
   * serve` stops then. Without it the server only says so.
   */
  onCheckoutGone?: () => void;
}

/** A running `docket serve`. */
export interface DocketServer {
  url: string;
  token: string | null;
  root: string;
  live: LiveChannel;
  /** The server's log: stderr, and its log file while it runs (docs/logging.md). */
  log: (line: string) => void;
  /** Tells live clients `stream.closing`, stops accepting, closes the plane and removes the lease. Idempotent. */
  stop(reason?: string): Promise<void>;
}

/**
 * Thrown when another server holds this checkout (its lock, or a lease that answers); the CLI maps
 * it to exit code 2. `holder` is its lease, null while it has not written one yet (still starting).
 */
export class ServerAlreadyRunningError extends Error {
  readonly exitCode = 2;
  constructor(readonly holder: Lease | null, root = holder?.root ?? "", moved: Lease | null = null) {
    super(
      holder !== null
        ? `Another docket server (pid ${holder.pid}) already serves ${holder.root} at ${holder.url}; use it, or stop it first.`
        : moved !== null
          ? `Another docket server (pid ${moved.pid}) holds ${root} (its lock): it serves this checkout at ${moved.url} under the path it had when it started, ${moved.root} — the checkout was moved or renamed while it served. Stop it (kill ${moved.pid}), then start docket serve here.`
          : `Another docket server holds ${root} (its lock) and has no lease: it is starting, or stopped without answering, or its .docket/ was removed under it; use it once it serves, or stop it first.`,
    );
    this.name = "ServerAlreadyRunningError";
  }
}

/** True for 127.0.0.0/8, ::1 and localhost: the addresses no other machine can reach. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || (isIP(h) === 4 && h.startsWith("127."));
}

/**
 * The token a server on `host` requires: the one given, else a fresh one when the host is not a
 * loopback address (another machine can reach it), else none. A given token must be 16–512
 * visible ASCII characters.
 */
export function serverToken(host: string, given: string | null): { token: string | null; generated: boolean } {
  if (given !== null) {
    if (!/^[\x21-\x7e]{16,512}$/.test(given)) throw new RangeError("The token must be 16 to 512 visible ASCII characters (no spaces).");
    return { token: given, generated: false };
  }
  if (isLoopback(host)) return { token: null, generated: false };
  return { token: randomBytes(32).toString("base64url"), generated: true };
}

/** Starts `docket serve`: boots the plane, binds, writes the lease, prints one line with the URL. */
export async function startServer(options: ServeOptions): Promise<DocketServer> {
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 4700;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`port must be a whole number from 0 to 65535, got ${port}`);
  const { token, generated } = serverToken(host, options.token ?? null);
  for (const name of options.allowedHosts ?? []) {
    if (isLocalhostName(name)) {
      throw new RangeError(
        `--allow-host ${name} is refused: a browser may reach another program at that name and this port (one on [::1] beside 127.0.0.1), and its pages would act as the cockpit. Open the server at the address it prints instead; localhost is redirected there.`,
      );
    }
  }

  // One writer per checkout (docs/durability.md): the lock is taken before anything of the
  // checkout is opened or recovered, and held for the server's life. Whatever the holder is doing
  // — serving, starting, frozen — a second server is refused here and touches nothing.
  const root = findCheckoutRoot(options.cwd);
  // The folder served, as it is now: moved later, its path names no checkout of this server's (watchLease).
  const home = folderIdentity(root);
  const lock = options.lock !== undefined ? options.lock : lockCheckout(root);
  // A lease whose process is gone was left by a killed server: the lock's holder is another,
  // starting, that has not written its own yet; naming the dead one would send the operator nowhere.
  if (lock === null) {
    const lease = readLease(root);
    // The lock moved with the folder (`mv`): its server's lease names the old path (serve tester, session 50).
    const other = lease === null ? readLeaseOfAnyRoot(root) : null;
    const moved = other !== null && !leaseHolderGone(other) ? other : null;
    throw new ServerAlreadyRunningError(lease !== null && leaseHolderGone(lease) ? null : lease, root, moved);
  }
  // A server that takes no lock (the Node build) is kept away by its lease, when it answers.
  const holder = readLease(root);
  if (holder && (await isLeaseLive(holder))) {
    lock.release();
    throw new ServerAlreadyRunningError(holder);
  }
  let logFile: LogFile | null = null;
  try {
    logFile = options.logFile === false ? null : openLogFile({ dir: join(ensureDocketDir(root), "logs"), files: options.limits.log_files, fileBytes: options.limits.log_file_bytes, onError: options.log });
    return await serveWithLog({ ...options, log: logFile ? teeLog(options.log, logFile) : options.log }, { token, generated, host, port, home }, logFile, lock);
  } catch (error) {
    logFile?.close();
    lock.release();
    throw error;
  }
}

/** The rest of startServer, with every line of `options.log` also in the log file; `lock` is let go by stop. */
async function serveWithLog(options: ServeOptions, bind: { token: string | null; generated: boolean; host: string; port: number; home: string | null }, logFile: LogFile | null, lock: CheckoutLock): Promise<DocketServer> {
  const { token, generated, host, port } = bind;
  // Before the lease is written: whatever a run that found this server left is written after it.
  const startedAt = Date.now();

  const boot = options.boot ?? bootPlane;
  const booted = await boot({
    cwd: options.cwd,
    storeKind: options.storeKind,
    limits: options.limits,
    capabilityDirs: options.capabilityDirs,
    workerUrl: options.workerUrl,
    importFile: options.importFile,
    log: options.log,
    trialLoads: true,
  });
  const plane = booted.engine;
  let running: RunningServer | null = null;
  try {
    // The run_ids that runs without a server used while none served (docs/protocol.md, "A run
    // without a server"): recorded before anything is answered, so that no start runs one again.
    const marks = recordRunMarks(plane.root, plane.store);
    if ("knowRunsWithoutServer" in plane) plane.knowRunsWithoutServer(markedRunLookup(plane.root, marks.marks));
    if (marks.recorded > 0) options.log(`recorded the run_ids of ${marks.recorded} run${marks.recorded === 1 ? "" : "s"} made without a server (.docket/runs/)`);
    if (marks.full > 0) options.log(`warning: ${marks.full} run_id${marks.full === 1 ? "" : "s"} of runs made without a server (.docket/runs/) could not be recorded: the run identities are full (run_identities); a start with one of them would run again`);
    // A memory store starts empty; the run_ids a server with the sqlite store took before it are
    // in .docket/state.db, and a start with one must not run again here (docs/durability.md).
    if (options.storeKind === "memory") recordStoreFileIdentities(plane, options.limits.run_identities, options.log);
    // Reports left by runs (takeLeftReports), now and every LEFT_REPORTS_EVERY_MS: a run this server
    // did not hear while it was frozen leaves them as it exits, with the server serving on. A memory
    // store holds nothing of an earlier server's: it takes only what was left since it started.
    const leftSince = options.storeKind === "memory" ? startedAt : undefined;
    const leftScan = setInterval(() => takeLeftReports(plane, leftSince), LEFT_REPORTS_EVERY_MS);
    leftScan.unref?.();
    takeLeftReports(plane, leftSince);
    if (marks.unreadable > 0) options.log(`warning: ${marks.unreadable} file${marks.unreadable === 1 ? "" : "s"} in .docket/runs/ ${marks.unreadable === 1 ? "is" : "are"} not a run_id mark and ${marks.unreadable === 1 ? "was" : "were"} left as ${marks.unreadable === 1 ? "it is" : "they are"}`);
    const allowedHosts = [...(options.allowedHosts ?? [])];
    // A name given to --host is trusted as --allow-host is, but never `localhost`: the server's own
    // origin is the address it binds (docs/security.md#the-servers-own-address).
    if (isIP(host) === 0 && !isLocalhostName(host)) allowedHosts.push(host);
    // port and origin are filled in as soon as the adapter has bound, before any request is answered.
    const config: ServerConfig = { host, port, allowedHosts, token, origin: "" };
    const live = new LiveChannel({ store: plane.store, limits: options.limits, clock: options.liveClock, whyNotHeld: plane.whyNotHeld });
    // One budget for the large answers of every route (large-answers.ts).
    const answers = largeAnswers(options.limits.answer_bytes_in_flight);
    // One budget for the request bodies every route reads, the direct POST route's included (request-bodies.ts).
    const bodies = requestBodies(options.limits.request_bytes_in_flight);
    const app = createApp({ plane, live, config, answers, bodies, mounts: options.mounts?.(plane, live, options.log), log: options.log });
    running =
      options.runtime === "bun"
        ? (await import("./adapter-bun.ts")).serveWithBun(app, live, { host, port, idleTimeoutSeconds: options.idleTimeoutSeconds, log: options.log, capabilityPost: capabilityPost({ plane, config, answers, bodies, log: options.log }) })
        : await (await import("./adapter-node.ts")).serveWithNode(app, live, { host, port, idleTimeoutSeconds: options.idleTimeoutSeconds });
    config.port = running.port;
    config.origin = running.url;

    const lease: Lease = { url: running.url, pid: process.pid, root: plane.root, token, started_at: new Date().toISOString(), pid_namespace: ownPidNamespace() };
    const acquired = await acquireLease(lease);
    if (!acquired.ok) throw new ServerAlreadyRunningError(acquired.holder);

    options.log(`docket serving ${plane.root} at ${running.url}${generated ? ` (token ${token}; also in .docket/lease.json)` : ""}`);
    // A browser cannot send a bearer token: this link signs it in once (see guards.ts cockpitSignIn).
    if (generated) options.log(`cockpit: ${running.url}/cockpit?token=${token}`);
    // A file that did not load never stops the server, but it is said once, at start (docs/architecture.md).
    for (const error of plane.loadErrors()) options.log(loadErrorLine(error));
    // And a file that looks like a capability file but is not one (`x.cap.mts`, one in a subfolder): not loaded, without it a word (authoring tester, session 46).
    for (const file of plane.lookalikes?.() ?? []) options.log(lookalikeLine(file));
    const watching = options.watch !== false ? watchCapabilities(booted, options) : null;
    const leaseWatch = watchLease(lease, bind.home, options);
    let stopping: Promise<void> | null = null;
    const server = running;
    return {
      url: running.url,
      token,
      root: plane.root,
      live,
      log: options.log,
      stop: (reason = "server stopping") =>
        (stopping ??= (async () => {
          watching?.close();
          // Before the lease goes: a look after it would write it again for a server that is stopping.
          clearInterval(leaseWatch);
          clearInterval(leftScan);
          // What runs is ended first, while live clients still listen: the end of each execution
          // (interrupted, or cancelled while it waited) reaches them, committed as every event they
          // get is, before stream.closing — a client following one with a memory store would never
          // learn it otherwise. A store that cannot write is not waited for long.
          if ("close" in plane) await plane.close();
          await settledWithin(plane.store.durable(), CLOSING_COMMIT_WAIT_MS);
          // Then live clients: each is told why, and given a moment to read what it was sent.
          await live.closeAll(reason);
          try {
            await server.stop();
            await booted.close();
          } finally {
            // Whatever failed above, a lease left behind would only mislead `docket run`.
            releaseLease(lease);
            logFile?.close();
            lock.release();
          }
        })()),
    };
  } catch (error) {
    await running?.stop().catch(() => undefined);
    await booted.close().catch(() => undefined);
    throw error;
  }
}

/** How often a running server looks that its lease is still in place (watchLease). */
export const LEASE_LOOK_MS = 2000;

/**
 * Looks every `leaseLookMs` that the server's lease is still in place, and writes it again when
 * `.docket/` was removed under the server: `git clean -fdX` (the folder ignores itself) took the
 * lease, and every `docket run` then found the checkout held with no address — "starting" for a
 * server serving for minutes — and reported to no one (docs/durability.md). The log says so once
 * per loss, and that a sqlite store's file went with the folder. A lease that cannot be written
 * is said once until it can be again.
 */
function watchLease(lease: Lease, home: string | null, options: Pick<ServeOptions, "log" | "storeKind" | "leaseLookMs" | "onCheckoutGone">): ReturnType<typeof setInterval> {
  let failing = false;
  // The checkout's folder itself (`home`, taken before the server bound): moved or deleted, its
  // path is no longer this checkout, and a lease written there made the old path again, an empty
  // checkout a second server was sent to (serve tester, session 50).
  let away = false;
  const timer = setInterval(() => {
    try {
      if (folderIdentity(lease.root) !== home) {
        // Served on, it would load and run whatever folder comes to the old path next, and write
        // into it (checking tester, session 50): docket serve stops.
        if (!away) {
          options.log(`warning: the checkout this server serves, ${lease.root}, is gone or is another folder now (moved, renamed or deleted): its lease is not written there again${options.onCheckoutGone ? ", and the server stops" : ""}. Start docket serve in the checkout's new place.`);
          options.onCheckoutGone?.();
        }
        away = true;
        return;
      }
      away = false;
      if (restoreLease(lease) !== "restored") return;
      failing = false;
      const storeGone = options.storeKind === "sqlite" && !existsSync(join(lease.root, ".docket", "state.db"));
      options.log(
        `warning: this server's lease (.docket/lease.json) was gone or not its own any more — .docket/ removed under it (git clean -fdX, rm -rf .docket?), or the file changed: it is written again, so docket run and docket mcp find this server.${
          storeGone ? " Its store file .docket/state.db went with it: it admits no new execution until it is restarted (docket serve), which starts a new store." : ""
        }`,
      );
    } catch (error) {
      if (!failing) options.log(`warning: the lease ${leasePath(lease.root)} is gone and cannot be written again (${(error as Error)?.message ?? String(error)}); docket run and docket mcp cannot find this server until it is. Trying again every ${Math.round((options.leaseLookMs ?? LEASE_LOOK_MS) / 1000)} s.`);
      failing = true;
    }
  }, options.leaseLookMs ?? LEASE_LOOK_MS);
  timer.unref?.();
  return timer;
}

/** A folder's device and inode (`dev:ino`), or null when nothing is there. */
function folderIdentity(path: string): string | null {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return null;
  }
}

/** How long a stopping server waits for the ends of its executions to be committed before it tells live clients it closes. */
const CLOSING_COMMIT_WAIT_MS = 2000;

/** Resolves once `promise` settles, or `ms` later, whichever is first; never rejects. */
function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([promise.then(() => undefined, () => undefined), late]).finally(() => clearTimeout(timer));
}

/** How often a server with a durable store looks for reports left by runs it did not hear. */
const LEFT_REPORTS_EVERY_MS = 5000;

/**
 * The reports runs left in `.docket/reports/` (docs/protocol.md): those of an execution this
 * durable store holds ended, no server would ever take, and they are removed; those of one it does
 * not hold are a run it never heard (down or frozen at its first report), taken as if the run had
 * sent them once its process is gone. Those of one it holds running are taken when the run is
 * judged by its silence. A memory store holds none of an earlier server's and cannot tell the
 * first two apart: a server with one passes `since`, its start, and looks only at what was left
 * after it (by a run that found this server), leaving older files to a server with the store file.
 */
export function takeLeftReports(plane: ExecutionPlane | Engine, since?: number): void {
  // While the store cannot write, what it says it holds may never reach its file: nothing left is
  // taken or removed then (a run's end was lost so after .docket/ was removed; checking tester, session 44).
  if (plane.store.storageFault() !== null) return;
  for (const id of leftReportIds(plane.root, since)) {
    const held = plane.store.current(id);
    if (held === null) {
      if ("takeLeftReports" in plane) plane.takeLeftReports(id);
    } else if (isTerminal(held.state)) removeLeftReports(plane.root, id);
  }
}

/**
 * Records in a memory store the run identities of the checkout's store file (`.docket/state.db`),
 * which this server, holding the checkout's lock, reads alone: a start with one of those run_ids
 * is that run, deduplicated, its details expired (they stay in the file). A file that cannot be
 * read is said, and the server serves on: those run_ids could run again.
 */
function recordStoreFileIdentities(plane: { root: string; store: Pick<ExecutionStore, "findRun" | "recordRun"> }, limit: number, log: (line: string) => void): void {
  const path = join(plane.root, ".docket", "state.db");
  let identities: RunIdentity[];
  try {
    identities = storedRunIdentities(path, limit);
  } catch (error) {
    log(`warning: could not read the run_ids of ${path} (${(error as Error)?.message ?? String(error)}): a start here with a run_id a server with the sqlite store took could run again`);
    return;
  }
  const { recorded, full } = recordIdentities(plane.store, identities);
  if (recorded > 0) log(`recorded the run_ids of ${recorded} run${recorded === 1 ? "" : "s"} of .docket/state.db (the memory store keeps no executions: those answer with their details expired)`);
  if (full > 0) log(`warning: ${full} run_id${full === 1 ? "" : "s"} of .docket/state.db could not be recorded: the run identities are full (run_identities); a start with one of them would run again`);
}

import type { CapabilityCatalog } from "./capability/registered.ts";
import type { ExecutionStore } from "./store/store.ts";
import type { Limits } from "./execution/limits.ts";
import type { Clock } from "./execution/clock.ts";
import { findCheckoutRoot } from "./capability/checkout.ts";
import { discoverCapabilities, loadCapabilityFile } from "./capability/discovery.ts";
import type { PathLook } from "./capability/path-looks.ts";
import { lookAtFolders } from "./capability/watch-folders.ts";
import { LiveCatalog } from "./capability/live-catalog.ts";
import { createCatalogReload, RECENT_WRITE_MS, writtenWithin, type ReloadChange } from "./capability/catalog-reload.ts";
import { dirname, join, resolve } from "node:path";
import { BUILTIN_DIR, BUILTINS } from "./capability/builtins.ts";
import { createMemoryStore } from "./store/memory-store.ts";
import { ensureDocketDir, isProcessAlive, ownPidNamespace } from "./server/lease.ts";
import { childLedger, endLeftChildren } from "./worker/child-ledger.ts";
import { createWorkerPool, DEFAULT_WORKER_URL } from "./worker/pool.ts";
import { realOrSelf, type CapabilitySources } from "./capability/capability-sources.ts";
import { namedChanges, sharedPrototypes } from "./worker/_shared-prototypes.ts";
import { builtinsGuard, builtinsWarning } from "./worker/_pristine-builtins.ts";
import { createLoadProbe, TRIAL_PATIENCE_MS } from "./worker/load-probe.ts";
import { realpathSync } from "node:fs";
import { createEngine, type Engine } from "./execution/engine.ts";
import { diskFreeBytes } from "./execution/storage-gate.ts";
import { hasArtifacts, removeArtifacts } from "./execution/artifact-files.ts";
import { readLeftReports, removeLeftReports } from "./store/left-reports.ts";
import type { ExecutionReport } from "./execution/report-protocol.ts";
import * as v from "valibot";

/** How to assemble one execution plane. */
export interface BootOptions {
  /** Where the process was started; the checkout root is found from here like git does. */
  cwd: string;
  /** "sqlite" keeps executions in `<root>/.docket/state.db` (bun:sqlite, so Bun only); "memory" for the process's life. */
  storeKind: "memory" | "sqlite";
  limits: Limits;
  /** `--capabilities DIR`, repeatable. */
  capabilityDirs?: string[];
  /** Extra capability files (`docket run ./file.ts`). */
  files?: string[];
  /** The files of the capability folders to load, when not all (discovery.ts `only`). */
  only?: (file: string) => boolean;
  /** Loads a user capability file; the Bun entry registers the virtual modules first. Default: `import()`. */
  importFile?: (absPath: string) => Promise<unknown>;
  /** The worker entry, when not the default (the Node bundle). */
  workerUrl?: URL;
  clock?: Clock;
  log?: (line: string) => void;
  /** Direct-lane workers (default: the `direct_workers` limit). */
  directWorkers?: number;
  /** How long a lane's worker that could not start waits before it is tried again (the pool's `restartAfterMs`; default 10 s). */
  workerRestartAfterMs?: number;
  /**
   * Try every capability file in a worker before importing it on the main thread (worker/load-probe.ts):
   * a file whose top level never ends must not reach a thread that then never answers again — a
   * server's, which serves everyone, nor a run's, which Ctrl-C and SIGTERM could no longer stop.
   */
  trialLoads?: boolean;
  /** How long a reload waits for one file's trial load before it parks it (default TRIAL_PATIENCE_MS), for tests. */
  trialPatienceMs?: number;
}

/** The assembled plane: registry → engine → store, with the pool under the engine. */
export interface BootedPlane {
  root: string;
  engine: Engine;
  registry: CapabilityCatalog;
  store: ExecutionStore;
  /** The ids of `options.files`, in order, for those that loaded. */
  fileIds: string[];
  /**
   * Loads the capability folders again and swaps the registry whole (docs/authoring.md, "Live
   * reload"); `settled()`: the folders were quiet before and during the read (catalog-reload.ts).
   */
  reload(settled?: () => boolean): Promise<ReloadChange>;
  /** The folders `reload` reads: `<root>/capabilities` and each `--capabilities DIR`. */
  watchedFolders: string[];
  /** Those folders as they were just before the first read: where a watch of them starts counting changes. */
  watchedLook: PathLook[];
  /** When the first read began (Date.now()): what a watch adds later counts changes from then. */
  firstReadAt: number;
  /** The folders of the local modules the capabilities import, as of the last load: watched too. */
  sourceFolders(): string[];
  close(): Promise<void>;
}

/**
 * Assembles the plane. The pool's workers start spawning first, while capability files load,
 * since a warm worker is ~15 ms away and discovery takes about as long.
 */
export async function bootPlane(options: BootOptions): Promise<BootedPlane> {
  const root = findCheckoutRoot(options.cwd);
  const importOnly = options.importFile ?? ((path: string) => import(path));
  // Each import on this thread is followed by a look at the built-ins it may have replaced here
  // alone (takeBackMain), before the server's own code calls them again.
  const importFile = async (path: string) => {
    try {
      return await importOnly(path);
    } finally {
      takeBackMain(path);
    }
  };
  const { limits } = options;
  let engine: Engine | null = null;
  // ctx.exec children a killed docket of this checkout left running are ended first (child-ledger.ts).
  const leftChildren = endLeftChildren(root, limits.grace_ms);
  if (leftChildren.ending.length > 0) {
    const groups = leftChildren.ending;
    options.log?.(`docket is ending ${groups.length} process group(s) of ctx.exec children (${groups.join(", ")}) that a docket process of this checkout, killed since, left running: TERM now, KILL after grace_ms (${limits.grace_ms} ms) to what ignores it — by the next docket of the checkout if this one has exited by then.`);
  }
  if (leftChildren.killed.length > 0) {
    options.log?.(`docket killed ${leftChildren.killed.length} process group(s) of ctx.exec children (${leftChildren.killed.join(", ")}) left running by a killed docket process of this checkout, which ignored the TERM an earlier docket sent them for longer than grace_ms (${limits.grace_ms} ms).`);
  }
  const pool = createWorkerPool({
    childLedger: childLedger(root),
    executionWorkers: limits.max_concurrent,
    directWorkers: options.directWorkers ?? limits.direct_workers,
    hostFacts: () => engine!.hostFacts(),
    workerUrl: options.workerUrl,
    onWorkerError: options.log,
    memoryLimitMb: limits.worker_memory_mb,
    loadTimeoutMs: limits.load_timeout_ms,
    // A forced stop already waited grace_ms for the handler; its children get half that again.
    childGraceMs: Math.floor(limits.grace_ms / 2),
    restartAfterMs: options.workerRestartAfterMs,
  });
  const warming = pool.warm();
  // Built again on every reload: files whose text did not change are not imported again, since a
  // file's module is imported by its version (capability-version.ts).
  // A file whose import never finishes is waited for once, not on every reload after it.
  const hung = new Set<string>();
  // The server's own thread: what a capability's code does to the shared prototypes after its
  // trial passed (a package's timer, which a trial cannot follow) is put back before each read of
  // the folders and every second, and said (docs/containment.md). Taken before any file is imported.
  const mainPrototypes = options.trialLoads ? sharedPrototypes() : null;
  // And the language's own built-ins (JSON.parse, the iterators…): a file may replace them here
  // alone (`if (isMainThread)`), or after its trial, which no trial sees (checking tester, session 44).
  const mainBuiltins = options.trialLoads ? builtinsGuard() : null;
  /** Built-ins that could not be put back, said once: looked at again, they are no file's doing (checking tester, session 44). */
  const keptSaid = new Set<string>();
  /** Puts back what capability code changed on this thread; `file`: the one just imported here, when the look follows an import. */
  function takeBackMain(file?: string): void {
    let found = null;
    let builtins = null;
    // Each look on its own: one that throws (a getter a file put in its way) does not stop the other.
    try {
      builtins = mainBuiltins?.takeBack() ?? null;
    } catch {
      builtins = null;
    }
    try {
      found = mainPrototypes?.takeBack() ?? null;
    } catch {
      found = null;
    }
    // The file as it is named, not as it was imported (pinned to the text read: `?docket_pin=…`).
    const who = file === undefined ? "code of a capability file (or a package it imports)" : `${file.split("?")[0]} (or a package it imports)`;
    const when = file === undefined ? "after the file loaded (a timer it left, which its trial could not follow)" : "when imported there (its trial in a worker did not do so)";
    const fresh = builtins === null ? [] : builtins.changed.filter((name) => !keptSaid.has(name));
    if (builtins !== null && fresh.length > 0) {
      const kept = builtins.kept.filter((name) => !keptSaid.has(name));
      for (const name of kept) keptSaid.add(name);
      options.log?.(builtinsWarning(who, when, fresh, kept, namedChanges));
    }
    if (found === null) return;
    const left = found.kept.length === 0 ? "docket put them back as the server began" : `docket could not put back ${namedChanges(found.kept)} (not configurable, or frozen): restart the server`;
    options.log?.(`warning: ${who} added or replaced ${namedChanges(found.changed)} on the server's main thread ${when}, which every object there shares; ${left}`);
  }
  const mainLook = mainPrototypes === null ? null : setInterval(() => takeBackMain(), MAIN_PROTOTYPES_LOOK_MS);
  (mainLook as { unref?: () => void } | null)?.unref?.();
  const probe = options.trialLoads ? createLoadProbe({ workerUrl: options.workerUrl ?? DEFAULT_WORKER_URL, timeoutMs: limits.load_timeout_ms, memoryLimitMb: limits.worker_memory_mb, report: options.log }) : null;
  let sourceFolders = new Set<string>();
  // The modules each capability file was last read with, itself included: a failure found just
  // after any of them was written is held as a save still landing (catalog-reload.ts).
  const modulesOf = new Map<string, string[]>();
  /**
   * Reads the folders. A reload's read (`patient`) parks a file whose trial load outlasts
   * TRIAL_PATIENCE_MS (load-probe.ts), so that it does not hold up the other files; the first read
   * waits for every verdict: there is nothing served yet to keep in its place.
   */
  const build = async (patient = false) => {
    takeBackMain();
    const waiting = probe ? (sources: CapabilitySources) => probe.check(sources) : undefined;
    const check = probe && patient ? (sources: CapabilitySources) => probe.check(sources, options.trialPatienceMs ?? TRIAL_PATIENCE_MS) : waiting;
    const folders = new Set<string>();
    const onSources = (sources: CapabilitySources) => {
      modulesOf.set(sources.file, sources.modules.map((module) => module.path));
      for (const module of sources.modules) for (const local of [module, ...module.imports]) folders.add(dirname(local.path));
      // A capability file that is a symbolic link is edited at its target: that folder is watched too
      // (helpers are found by the resolver, at their real paths already).
      folders.add(dirname(realOrSelf(sources.file)));
    };
    const registry = await discoverCapabilities({
      onSources,
      hung,
      root,
      dirs: options.capabilityDirs ?? [],
      builtins: BUILTINS,
      builtinDir: BUILTIN_DIR,
      importFile,
      loadTimeoutMs: limits.load_timeout_ms,
      probe: check,
      only: options.only,
    });
    const fileIds: string[] = [];
    for (const file of options.files ?? []) {
      const path = resolve(options.cwd, file);
      // A file of the checkout's capabilities/ that failed there already: its errors stand, and a
      // second import (of a file that never finishes loading, say) would only wait as long again.
      if (registry.loadErrors().some((error) => sameFile(error.file, path))) continue;
      // A file named on the command line has no registry entry to keep in its place: waited for.
      const loaded = await loadCapabilityFile(path, importFile, limits.load_timeout_ms, waiting);
      if (!loaded.ok) {
        for (const error of loaded.errors) registry.addLoadError(error);
        continue;
      }
      const existing = registry.get(loaded.capability.id);
      // `docket run ./capabilities/x.ts` names a file discovery already loaded: the same capability.
      if (existing?.source.kind === "file" && sameFile(existing.source.file, path)) fileIds.push(existing.id);
      else if (registry.add(loaded.capability.def, { kind: "file", file: path }, { version: loaded.capability.version })) fileIds.push(loaded.capability.id);
    }
    sourceFolders = folders;
    probe?.rest();
    return { registry, fileIds };
  };
  // The folders as they are just before the first read: a file saved between that read and the
  // watch's start (a folder made right after `docket serve` began) is a change to it, not where it
  // starts counting from (watch-folders.ts, `lookedAt`).
  const watchedFolders = [join(root, "capabilities"), ...(options.capabilityDirs ?? []).map((dir) => resolve(dir))];
  const watchedLook = lookAtFolders(watchedFolders);
  const firstReadAt = Date.now();
  const first = await build();
  // What a file's top level deferred to the next turn (a `setTimeout(…, 0)` that replaces a
  // built-in) is looked at before anything runs, not a second later (checking tester, session 44).
  if (mainBuiltins !== null) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    takeBackMain();
  }
  const registry = new LiveCatalog(first.registry);
  const { fileIds } = first;
  const reload = createCatalogReload(registry, async () => (await build(true)).registry, {
    writtenJustNow: (file) => (modulesOf.get(file) ?? [file]).some((module) => writtenWithin(module, RECENT_WRITE_MS)),
  });
  let store: ExecutionStore;
  try {
    store = await openStore(options.storeKind, root, limits, options.clock, options.log);
  } catch (error) {
    // An unusable store file stops the boot; the workers already spawning must not outlive it
    // (and their warm-up, which the close ends, is no longer awaited).
    warming.catch(() => undefined);
    if (mainLook !== null) clearInterval(mainLook);
    await Promise.all([pool.close(), probe?.close()]);
    throw error;
  }
  const durable = "storedBytes" in store ? (store as import("./store/sqlite-store.ts").SqliteExecutionStore) : null;
  engine = createEngine({
    registry,
    store,
    pool,
    limits,
    root,
    storeKind: options.storeKind,
    capabilityFolders: (options.capabilityDirs ?? []).map((dir) => resolve(dir)),
    clock: options.clock,
    log: options.log,
    storedBytes: durable ? () => durable.storedBytes() : undefined,
    expireDetails: durable ? () => void durable.expireDetails() : undefined,
    // The free-space floor guards a store that writes there; one in memory keeps nothing on disk.
    diskFree: durable ? () => diskFreeBytes(root) : undefined,
    processAlive: isProcessAlive,
    pidNamespace: ownPidNamespace(),
    leftReports: (id) => leftReportsOf(root, id),
  });
  try {
    await warming;
  } catch (error) {
    // A lane none of whose workers could start stops the boot: nothing of the plane may outlive
    // it, not a pool trying to start them again for nobody.
    if (mainLook !== null) clearInterval(mainLook);
    await Promise.all([engine.close(), probe?.close()]);
    store.close();
    throw error;
  }
  const booted = engine;
  return {
    root,
    engine: booted,
    registry,
    store,
    fileIds,
    reload,
    watchedFolders,
    watchedLook,
    firstReadAt,
    sourceFolders: () => [...sourceFolders],
    async close() {
      if (mainLook !== null) clearInterval(mainLook);
      await Promise.all([booted.close(), probe?.close()]);
      store.close();
    },
  };
}

/** How often the server's main thread looks at the shared prototypes (a look costs under 2 µs). */
const MAIN_PROTOTYPES_LOOK_MS = 1000;

/**
 * The plane's store. The sqlite one is imported here, on demand, so that `docket run` and the Node
 * adapter never load bun:sqlite; it says on the log what it found unfinished and ended (docs/architecture.md).
 */
async function openStore(kind: BootOptions["storeKind"], root: string, limits: Limits, clock: Clock | undefined, log: ((line: string) => void) | undefined): Promise<ExecutionStore> {
  const now = clock ? () => clock.now() : undefined;
  // A listener that throws is a bug worth its stack in the server's log (and log file).
  const onListenerError = log && ((error: unknown, event: { event_id: string }) => log(`docket: an event listener threw on ${event.event_id}; further errors of this subscription are not reported: ${(error as Error)?.stack ?? String(error)}`));
  // Nobody can settle it any more: said, with what to do, rather than gone without a word (docs/reconciliation.md).
  const onForgotUnsettled = log && ((forgotten: { id: string; capability: string }) => log(`docket forgot ${forgotten.id} (${forgotten.capability}), whose outcome was unknown and never settled: more unsettled executions than executions_retained (${limits.executions_retained}) were held, so the oldest went, and it can no longer be reconciled. Settle unknown outcomes as they come (docket executions reconcile <id>, or the cockpit), or raise --executions-retained.`));
  // A forgotten execution's artifacts go with it: nothing could download or release them any more.
  const onForgotten = (id: string) => {
    try {
      removeArtifacts(root, id);
    } catch (error) {
      log?.(`docket could not remove the artifacts of ${id}, forgotten past executions_retained (${(error as Error)?.message ?? error}): delete ${join(root, ".docket", "artifacts", id)} yourself.`);
    }
  };
  if (kind === "memory") return createMemoryStore({ limits, clock: now, onListenerError, onForgotUnsettled, onForgotten });
  const { createSqliteStore } = await import("./store/sqlite-store.ts");
  const store = createSqliteStore({ path: join(ensureDocketDir(root), "state.db"), limits, clock: now, onListenerError, onForgotUnsettled, onForgotten, artifactsHeld: (id) => hasArtifacts(root, id), onPersistError: log && ((error) => log(`docket could not write the execution store (${(error as Error)?.message ?? error}); retrying`)) });
  if (store.recovered.length > 0) {
    const failed = store.recovered.filter((r) => r.state === "failed").length;
    const ended = [failed > 0 ? `${failed} running → failed (interrupted)` : "", failed < store.recovered.length ? `${store.recovered.length - failed} queued → cancelled` : ""];
    log?.(`docket found ${store.recovered.length} execution(s) unfinished when this checkout's server last stopped: ${ended.filter(Boolean).join(", ")}.`);
  }
  return store;
}

/** True when two paths name one file, through symlinks. */
function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return resolve(a) === resolve(b);
  }
}

/**
 * The reports a run left in `root` for execution `id` (store/left-reports.ts), each checked as
 * `executions.report` checks a report sent over HTTP: one that is not a report leaves none taken.
 */
function leftReportsOf(root: string, id: string): { reports: ExecutionReport[]; forget(): void } | null {
  const left = readLeftReports(root, id);
  if (left === null) return null;
  const schema = BUILTINS["executions.report.ts"]!.input;
  const checked = left.map((report) => v.safeParse(schema, report));
  const reports = checked.every((result) => result.success) ? checked.map((result) => result.output as ExecutionReport) : [];
  return { reports, forget: () => removeLeftReports(root, id) };
}

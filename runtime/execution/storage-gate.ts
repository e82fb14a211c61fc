import { lstatSync, readdirSync, statfsSync } from "node:fs";
import { join } from "node:path";
import { storeDamagedRemedy, type StorageFault } from "../store/store.ts";
import type { Clock } from "./clock.ts";
import type { Limits } from "./limits.ts";

/** How long one measurement of `.docket/` answers admissions before the next one is taken. */
export const MEASURE_EVERY_MS = 5000;
/**
 * The same within NEAR_SHARE of the budget: measured every 5 s, a store taking ~5,000 starts a
 * second overshot a 512 MiB budget by 19 % before the next measure refused anything.
 */
export const NEAR_MEASURE_EVERY_MS = 500;
/** What share of the budget in use counts as near it. */
export const NEAR_SHARE = 0.9;
/**
 * Free space under this many times the floor counts as near it: it is then read on every
 * admission (one statfs, microseconds), since thousands of starts a second come between two
 * measures and each writes.
 */
const NEAR_FLOOR = 2;
/** What `Retry-After` says while the disk is under its free-space floor: space comes back when someone frees it. */
const DISK_LOW_RETRY_S = 10;
/** What `Retry-After` says while the store cannot write: the writer retries every second. */
const FAULT_RETRY_S = 5;
const FAULT_SUGGESTION = "Free disk space under the checkout's .docket/ folder (or fix the disk); admissions resume by themselves once a write succeeds. health.report says what the store reports: a store file removed under the server (.docket/ deleted) needs a restart of docket serve.";
/** What `Retry-After` says over the budget: space comes back by a person's release, not by waiting. */
const BUDGET_RETRY_S = 60;

/** How much `.docket/` holds against its budget, as health and refusals state it. */
export interface StorageUsage {
  /** Bytes in use: the store's live state (sqlite: pages in use) and every artifact file. */
  bytes: number;
  budget_bytes: number;
  over_budget: boolean;
  /** Bytes free on the disk holding `.docket/` (for this user); null where that cannot be told. */
  disk_free_bytes: number | null;
  /** What it must keep free (disk_free_floor_bytes; 0: no floor). */
  disk_free_floor_bytes: number;
  /** Free space is under the floor: new executions are refused. */
  disk_low: boolean;
}

/** Why a new admission is refused now: the parts of its failure descriptor. */
export interface StorageRefusal {
  error_code: "unavailable" | "capacity";
  message: string;
  /** When waiting cannot help (a damaged file); otherwise the code's default. */
  retryability?: "never";
  suggestion: string;
  context: Record<string, unknown>;
}

/** Options of {@link createStorageGate}. */
export interface StorageGateOptions {
  root: string;
  limits: Pick<Limits, "storage_budget_bytes" | "disk_free_floor_bytes">;
  /** The store's current write fault (ExecutionStore.storageFault). */
  fault: () => StorageFault | null;
  /** Bytes of state the store keeps on disk; 0 for a store that keeps nothing there. */
  stateBytes: () => number;
  /** Expires what may expire (a durable store's details), before a measure counts them as over. */
  expire?: () => void;
  /**
   * Bytes free on the disk holding `root`'s .docket/ (diskFreeBytes), for a store that keeps its
   * state there; absent for one that does not (memory): its disk is not looked at, and no floor holds.
   */
  diskFree?: () => number | null;
  clock: Pick<Clock, "monotonic">;
}

/** What admission and health ask about storage (docs/limits.md, "Storage faults and budget"). */
export interface StorageGate {
  /** Null when a new execution may be admitted; else why not. Cheap: the measure is cached. */
  refusal(verb: string): StorageRefusal | null;
  /**
   * Why an admission a write fault took back (ExecutionStore.withdraw) is refused: `verb` says
   * what was asked ("start executions.demonstrate"), `id` the execution taken back, `free` what
   * it held that is free again (its run_id), if anything.
   */
  withdrawn(verb: string, id: string, free: string | null): StorageRefusal;
  /** The current fault of the store, if any. */
  fault(): StorageFault | null;
  /** The last measure of `.docket/` (taken now when it is older than MEASURE_EVERY_MS, NEAR_MEASURE_EVERY_MS near the budget or the floor). */
  usage(): StorageUsage;
}

/**
 * The storage side of admission: a store that cannot write refuses new executions at once
 * (`unavailable`, until its writer succeeds again — nothing to reset by hand); so does a disk with
 * less free space than disk_free_floor_bytes, before any write of theirs can fail (`unavailable`,
 * until space is freed); `.docket/` over its soft budget refuses them with `capacity`, measured
 * after what may expire has expired. Nothing is ever deleted to get under the budget: a person
 * releases artifacts or raises the budget.
 */
export function createStorageGate(options: StorageGateOptions): StorageGate {
  const { root, limits, clock } = options;
  const diskFree = options.diskFree ?? (() => null);
  let measured: StorageUsage | null = null;
  let measuredAt = -Infinity;

  function measure(): StorageUsage {
    const bytes = options.stateBytes() + artifactBytes(join(root, ".docket", "artifacts"));
    return withFree({ bytes, budget_bytes: limits.storage_budget_bytes, over_budget: bytes > limits.storage_budget_bytes, disk_free_bytes: null, disk_free_floor_bytes: limits.disk_free_floor_bytes, disk_low: false });
  }

  /** The usage with the disk's free space read now. */
  function withFree(usage: StorageUsage): StorageUsage {
    const free = diskFree();
    return { ...usage, disk_free_bytes: free, disk_low: usage.disk_free_floor_bytes > 0 && free !== null && free < usage.disk_free_floor_bytes };
  }

  /** Near the floor: the free space is read on every admission. */
  function nearFloor(usage: StorageUsage): boolean {
    return usage.disk_free_floor_bytes > 0 && usage.disk_free_bytes !== null && usage.disk_free_bytes < usage.disk_free_floor_bytes * NEAR_FLOOR;
  }

  function usage(): StorageUsage {
    const now = clock.monotonic();
    // Near the budget: .docket/ measured more often, so that it is overshot by little.
    const every = measured !== null && (measured.bytes >= measured.budget_bytes * NEAR_SHARE || nearFloor(measured)) ? NEAR_MEASURE_EVERY_MS : MEASURE_EVERY_MS;
    if (measured !== null && now - measuredAt < every && nearFloor(measured)) measured = withFree(measured);
    if (measured === null || now - measuredAt >= every) {
      measured = measure();
      if (measured.over_budget && options.expire) {
        try {
          options.expire();
          measured = measure();
        } catch {
          // Expiry could not run now (its write failed: the store's fault says so); the measure stands.
        }
      }
      measuredAt = now;
    }
    return measured;
  }

  function refusal(verb: string): StorageRefusal | null {
    const fault = options.fault();
    if (fault?.damaged) {
      return {
        error_code: "unavailable",
        message: `Cannot ${verb}: the execution store's file ${fault.damaged.path} is damaged (found at ${fault.since}), so no new execution is admitted; what it can still read is answered.`,
        retryability: "never",
        suggestion: storeDamagedRemedy(fault.damaged.path),
        context: { reason: "store_damaged", since: fault.since },
      };
    }
    if (fault !== null) {
      return {
        error_code: "unavailable",
        message: `Cannot ${verb}: the execution store cannot write to disk (since ${fault.since}), so no new execution is admitted until it can; what was accepted before is kept and written once it can.`,
        suggestion: FAULT_SUGGESTION,
        context: { reason: "storage_fault", since: fault.since, retry_after_s: FAULT_RETRY_S },
      };
    }
    const now = usage();
    if (now.disk_low) {
      return {
        error_code: "unavailable",
        message: `Cannot ${verb}: the disk holding .docket/ has ${formatBytes(now.disk_free_bytes!)} free, under the ${formatBytes(now.disk_free_floor_bytes)} it must keep (disk_free_floor_bytes), so no new execution is admitted until space is freed; what was accepted before is kept.`,
        suggestion: "Free disk space on the disk holding the checkout's .docket/ folder; admissions resume by themselves within seconds. Lower --disk-free-floor-bytes (DOCKET_DISK_FREE_FLOOR_BYTES) only for a disk that small on purpose.",
        context: { reason: "disk_low", free_bytes: now.disk_free_bytes, floor_bytes: now.disk_free_floor_bytes, retry_after_s: DISK_LOW_RETRY_S },
      };
    }
    if (!now.over_budget) return null;
    return {
      error_code: "capacity",
      message: `Cannot ${verb}: .docket/ holds ${formatBytes(now.bytes)}, over its storage budget of ${formatBytes(now.budget_bytes)} (storage_budget_bytes).`,
      suggestion: "Release the artifacts of finished executions (executions.release: POST /api/v1/executions/release with the id), or raise the budget with --storage-budget-bytes or DOCKET_STORAGE_BUDGET_BYTES; nothing is deleted on its own.",
      context: { reason: "storage_budget", bytes: now.bytes, limit: now.budget_bytes, retry_after_s: BUDGET_RETRY_S },
    };
  }

  function withdrawn(verb: string, id: string, free: string | null): StorageRefusal {
    const fault = options.fault();
    return {
      error_code: "unavailable",
      message: `Cannot ${verb}: the execution store could not write it to disk${fault ? ` (${fault.reason})` : ""}, so ${id} was taken back before anything of it ran; nothing was started${free ? `, and ${free} is free again` : ""}.`,
      suggestion: `${FAULT_SUGGESTION} Then start it again.`,
      context: { reason: "storage_fault", since: fault?.since ?? null, retry_after_s: FAULT_RETRY_S, withdrawn: id },
    };
  }

  return { refusal, withdrawn, fault: options.fault, usage };
}

/**
 * Bytes free for this user on the disk holding `root`'s .docket/ (the checkout's disk before that
 * folder exists); null where the file system cannot say.
 */
export function diskFreeBytes(root: string): number | null {
  for (const dir of [join(root, ".docket"), root]) {
    try {
      const { bavail, bsize } = statfsSync(dir);
      return Number(bavail) * Number(bsize);
    } catch {
      // Not there (yet), or no statfs here: the next, then no answer.
    }
  }
  return null;
}

/** Bytes of the regular files under `dir`, recursively; 0 when it does not exist. Symlinks are not followed. */
export function artifactBytes(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let total = 0;
  for (const name of names) {
    const path = join(dir, name);
    try {
      const stat = lstatSync(path);
      if (stat.isDirectory()) total += artifactBytes(path);
      else if (stat.isFile()) total += stat.size;
    } catch {
      // Released while measured: it no longer counts.
    }
  }
  return total;
}

/** 536870912 → "512 MiB"; bytes under 1 KiB as they are. */
export function formatBytes(bytes: number): string {
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = "bytes";
  for (const next of units) {
    if (value < 1024) break;
    value /= 1024;
    unit = next;
  }
  return unit === "bytes" ? `${bytes} bytes` : `${Number.isInteger(value) ? value : value.toFixed(1)} ${unit}`;
}

// The reload of a live catalog: the capability folders read again and swapped in whole
// (docs/authoring.md, "Live reload").

import { statSync } from "node:fs";
import { diffCatalogs, type CatalogChange, type LiveCatalog } from "./live-catalog.ts";
import type { CapabilityCatalog, LoadError, RegisteredCapability } from "./registered.ts";

/** What one reload changed, and the files whose failure (or absence) it held back (read them again once the folders are quiet). */
export interface ReloadChange extends CatalogChange {
  held: string[];
  /**
   * Settles once one of the files whose trial load outlasted the reload's patience has its
   * verdict (reload again then: the verdict is answered at once); null when none did.
   */
  parked: Promise<void> | null;
}

/** Options of {@link createCatalogReload}. */
export interface CatalogReloadOptions {
  /** How long a capability is kept past its file's failure while the folders never settle; default MAX_HOLD_MS. */
  maxHoldMs?: number;
  /** How many reads found it failing before one may drop it unsettled; default MIN_HOLD_READS. */
  minHoldReads?: number;
  /** Monotonic milliseconds; `performance.now()` unless a test moves it. */
  now?: () => number;
  /** Whether `file` (or a module it imports: boot.ts says) was written within RECENT_WRITE_MS; tests answer it themselves. */
  writtenJustNow?: (file: string) => boolean;
}

/**
 * How recently a served capability's file must have been written for its failure to be held even
 * by a read of quiet folders: a save that pauses mid-write (a slow copy, a network share) left the
 * folders quiet for the debounce, and a file read half-written was judged broken — its capability
 * removed, calls answered 404, then added again (authoring tester, session 46); a helper it
 * imports saved so did the same (checking tester). Such a failure is judged once the files are
 * older than this, with the usual limits of a hold.
 */
export const RECENT_WRITE_MS = 1000;

/** Whether `file` was modified less than `ms` ago; false when it is gone. */
export function writtenWithin(file: string, ms: number): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs < ms;
  } catch {
    // Gone: a removal is judged as a removal.
    return false;
  }
}

/**
 * The longest a capability is kept in place of a failing or missing file while the folders keep
 * changing: long enough for an editor's save to land between two reads forced by a folder that is
 * never quiet (one every half second), short enough that a file really deleted or broken there is
 * said within seconds rather than never.
 */
export const MAX_HOLD_MS = 3000;
/**
 * And the fewest reads that must have found it failing or gone first: on a busy machine one read
 * (its trial loads) can take longer than MAX_HOLD_MS, and a single unlucky read must not drop it.
 */
export const MIN_HOLD_READS = 4;

/**
 * Reloads `catalog` with what `build` reads of the folders. One reload runs at a time; a change
 * met during one (`reload()` called meanwhile) is picked up by one more pass right after it, and
 * what changed from before the first pass to after the last is said once.
 *
 * `settled()`, asked once a pass has read the folders: true when they were quiet before it and
 * stayed so while it read them (watch-capabilities.ts asks the folder watch). A pass that was not
 * settled may have read a file mid-save — a save is a truncate then a write, or a rename of the
 * old file away then a write (Vim), or an unlink then a create, and a reload forced by a folder
 * that is never quiet comes at any moment — so a capability the catalog serves whose file (or a
 * helper) now fails to load or is gone is kept in place, its last version served, and named in
 * `held`: the caller reads the folders again once they are quiet. A settled pass judges: a text
 * saved whole since loads, a failure or absence still there is the load error or the removal.
 * While the folders never settle, a capability is kept `maxHoldMs` from the first pass that
 * found it failing, and through at least `minHoldReads` such passes; the pass after both judges
 * as a settled one would.
 */
export function createCatalogReload(catalog: LiveCatalog, build: () => Promise<CapabilityCatalog>, options: CatalogReloadOptions = {}): (settled?: () => boolean) => Promise<ReloadChange> {
  const maxHoldMs = options.maxHoldMs ?? MAX_HOLD_MS;
  const minHoldReads = options.minHoldReads ?? MIN_HOLD_READS;
  const now = options.now ?? (() => performance.now());
  const writtenJustNow = options.writtenJustNow ?? ((file: string) => writtenWithin(file, RECENT_WRITE_MS));
  let reloading: Promise<ReloadChange> | null = null;
  let again = false;
  // The settledness asked of the next pass: the latest caller's (a change met meanwhile is newer).
  let isSettled: () => boolean = () => false;
  // Files whose capability is kept in place of their failure: since when (the first pass that found it), through how many passes.
  let held = new Map<string, { since: number; reads: number }>();
  return async function reload(settled: () => boolean = () => false): Promise<ReloadChange> {
    isSettled = settled;
    if (reloading) {
      again = true;
      return reloading;
    }
    reloading = (async () => {
      const before = catalog.snapshot();
      let parked: ReadonlyMap<string, Promise<void>> = new Map();
      do {
        again = false;
        const next = await build();
        // A change met while this pass read the folders (a reload asked for meanwhile) unsettles it.
        const judge = !again && isSettled();
        const at = now();
        // A file whose trial is still running keeps what was served of it, its capability or its
        // load error, until its verdict: the other files' changes are not held up by it.
        parked = next.parked?.() ?? new Map();
        const kept = new Map<string, { since: number; reads: number }>();
        for (const [file, capability] of droppedFiles(catalog.snapshot(), next)) {
          if (parked.has(file)) continue;
          const { since, reads } = held.get(file) ?? { since: at, reads: 0 };
          const within = at - since < maxHoldMs || reads < minHoldReads;
          if ((!judge || writtenJustNow(file)) && within && next.get(capability.id) === null) kept.set(file, { since, reads: reads + 1 });
        }
        held = kept;
        const served = catalog.snapshot();
        const keptCapabilities = served.list().filter((capability) => capability.source.kind === "file" && (kept.has(capability.source.file) || (parked.has(capability.source.file) && next.get(capability.id) === null)));
        const keptErrors = served.loadErrors().filter((error) => parked.has(error.file));
        catalog.swap(keptCapabilities.length + keptErrors.length === 0 ? next : keeping(next, keptCapabilities, keptErrors));
      } while (again);
      return { ...diffCatalogs(before, catalog.snapshot()), held: [...held.keys()], parked: parked.size === 0 ? null : Promise.race(parked.values()) };
    })();
    try {
      return await reloading;
    } finally {
      reloading = null;
    }
  };
}

/**
 * The files (with their capability) that `served` serves and that `next` does not: a load error
 * now, or no capability from that file at all (the file is gone, for now or for good).
 */
function droppedFiles(served: CapabilityCatalog, next: CapabilityCatalog): Map<string, RegisteredCapability> {
  const serving = new Set(next.list().flatMap((capability) => (capability.source.kind === "file" ? [capability.source.file] : [])));
  return new Map(served.list().flatMap((capability) => (capability.source.kind === "file" && !serving.has(capability.source.file) ? [[capability.source.file, capability] as const] : [])));
}

/**
 * `next` with `kept` served in place of their files' load errors or absence (`kept` ids are free
 * in `next`), and with `keptErrors`, the load errors served of files `next` did not judge yet.
 */
function keeping(next: CapabilityCatalog, kept: RegisteredCapability[], keptErrors: LoadError[]): CapabilityCatalog {
  const files = new Set(kept.flatMap((capability) => (capability.source.kind === "file" ? [capability.source.file] : [])));
  const byId = new Map(kept.map((capability) => [capability.id, capability]));
  return {
    list: () => [...next.list(), ...kept].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    get: (id) => next.get(id) ?? byId.get(id) ?? null,
    loadErrors: () => [...next.loadErrors().filter((error) => !files.has(error.file)), ...keptErrors],
  };
}

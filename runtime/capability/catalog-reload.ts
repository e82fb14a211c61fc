// The reload of a live catalog: the capability folders read again and swapped in whole
// (docs/authoring.md, "Live reload").

import { diffCatalogs, type CatalogChange, type LiveCatalog } from "./live-catalog.ts";
import type { CapabilityCatalog, RegisteredCapability } from "./registered.ts";

/** What one reload changed, and the files whose new failure it held back (read them again once the folder is quiet). */
export interface ReloadChange extends CatalogChange {
  held: string[];
}

/**
 * Reloads `catalog` with what `build` reads of the folders. One reload runs at a time; a change
 * met during one (`reload()` called meanwhile) is picked up by one more pass right after it, and
 * what changed from before the first pass to after the last is said once.
 *
 * A pass that turns a capability the catalog serves into a load error keeps that capability in
 * place, once, and says so in `held`: a save is a truncate and then a write, and a pass can read a
 * file or a helper in between (a reload forced by a folder that is never quiet comes at any
 * moment), which would drop a valid capability and answer its calls 404 until the next reload.
 * The caller reads the folders again once they are quiet (watch-capabilities.ts): a text saved
 * whole since loads; a failure still there is then the load error, as any other.
 */
export function createCatalogReload(catalog: LiveCatalog, build: () => Promise<CapabilityCatalog>): () => Promise<ReloadChange> {
  let reloading: Promise<ReloadChange> | null = null;
  let again = false;
  // Files held back by the last pass: their next failure is the load error.
  let held = new Set<string>();
  return async function reload(): Promise<ReloadChange> {
    if (reloading) {
      again = true;
      return reloading;
    }
    reloading = (async () => {
      const before = catalog.snapshot();
      do {
        again = false;
        const next = await build();
        const failing = droppedFiles(catalog.snapshot(), next);
        const hold = [...failing.keys()].filter((file) => !held.has(file));
        held = new Set(hold);
        catalog.swap(hold.length === 0 ? next : keeping(next, hold.map((file) => failing.get(file)!)));
      } while (again);
      return { ...diffCatalogs(before, catalog.snapshot()), held: [...held] };
    })();
    try {
      return await reloading;
    } finally {
      reloading = null;
    }
  };
}

/** The files (with their capability) that `served` serves and that are load errors in `next`. */
function droppedFiles(served: CapabilityCatalog, next: CapabilityCatalog): Map<string, RegisteredCapability> {
  const failed = new Set(next.loadErrors().map((error) => error.file));
  return new Map(served.list().flatMap((capability) => (capability.source.kind === "file" && failed.has(capability.source.file) ? [[capability.source.file, capability] as const] : [])));
}

/** `next` with `kept` served in place of their files' load errors (one whose id another file took now is not kept). */
function keeping(next: CapabilityCatalog, kept: RegisteredCapability[]): CapabilityCatalog {
  const free = kept.filter((capability) => next.get(capability.id) === null);
  const files = new Set(free.map((capability) => capability.source.file));
  const byId = new Map(free.map((capability) => [capability.id, capability]));
  return {
    list: () => [...next.list(), ...free].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    get: (id) => next.get(id) ?? byId.get(id) ?? null,
    loadErrors: () => next.loadErrors().filter((error) => !files.has(error.file)),
  };
}

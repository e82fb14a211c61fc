import { prepareCapabilityThread } from "./_capability-thread.ts";
import { BUILTINS } from "../capability/builtins.ts";
import { findCheckoutRoot } from "../capability/checkout.ts";
import { discoverCapabilities } from "../capability/discovery.ts";
import type { CapabilityCatalog } from "../capability/registered.ts";
import { defaultLimits, resolveLimits } from "../execution/limits.ts";
import { createLoadProbe } from "../worker/load-probe.ts";
import { DEFAULT_WORKER_URL } from "../worker/pool.ts";
import { guardExit, LISTING_ENDING } from "../worker/_own-process.ts";
import { builtinsGuard, builtinsWarning } from "../worker/_pristine-builtins.ts";
import { namedChanges } from "../worker/_shared-prototypes.ts";

/**
 * The registry alone, as `docket capabilities` reads it: the same discovery `bootPlane` runs, without
 * the worker pool, store and engine that listing does not need (two workers would double its time).
 */
export async function loadRegistry(options: { cwd: string; capabilityDirs: string[] }): Promise<{ root: string; registry: CapabilityCatalog }> {
  prepareCapabilityThread();
  // What a file's code does on this thread once imported (a package's child-process callback):
  // its process.exit() fails instead of ending the listing with nothing written (main.ts keeps
  // the runtime's own exit for the command's end).
  guardExit(LISTING_ENDING);
  const root = findCheckoutRoot(options.cwd);
  // Only the load time limit matters here; a bad DOCKET_LOAD_TIMEOUT_MS falls back to its default
  // rather than stopping a listing (serve and run refuse it with the limit named).
  let loadTimeoutMs: number | undefined;
  try {
    loadTimeoutMs = resolveLimits({ env: process.env }).load_timeout_ms;
  } catch {
    loadTimeoutMs = undefined;
  }
  // Each file tried in a worker first, as a server does: one whose top level loops or calls
  // process.exit() is listed as a load error instead of hanging the listing or ending it unsaid.
  const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: loadTimeoutMs ?? defaultLimits().load_timeout_ms, report: (line) => process.stderr.write(`${line}\n`) });
  // What a file replaces on this thread alone (`if (isMainThread)`), which its trial never sees,
  // is put back after its import, before the listing's own code calls it (docs/containment.md).
  const builtins = builtinsGuard();
  const takeBack = (who: string, when: string) => {
    const found = builtins.takeBack();
    if (found !== null) process.stderr.write(`${builtinsWarning(who, when, found.changed, found.kept, namedChanges)}\n`);
  };
  const importFile = async (path: string) => {
    try {
      return await import(path);
    } finally {
      takeBack(`${path.split("?")[0]} (or a package it imports)`, "when imported there (its trial in a worker did not do so)");
    }
  };
  try {
    const registry = await discoverCapabilities({ root, dirs: options.capabilityDirs, builtins: BUILTINS, importFile, loadTimeoutMs, probe: (sources) => probe.check(sources) });
    // What a top level deferred to the next turn, looked at before the listing is written.
    await new Promise((resolve) => setTimeout(resolve, 1));
    takeBack("code of a capability file (or a package it imports)", "after the files loaded (a turn they deferred, which their trials could not follow)");
    return { root, registry };
  } finally {
    await probe.close();
  }
}

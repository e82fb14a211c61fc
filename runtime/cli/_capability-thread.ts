import { registerDocketModules } from "../adapter/bun-modules.ts";
import { guardNestedWorkers, guardSignals } from "../worker/_own-process.ts";

/**
 * Readies this thread to import capability files: `"docket"` and `"valibot"` served from this
 * process, and a top level (or what it defers) kept from signalling the process it runs in
 * (docs/containment.md). Call it before the first capability file is imported; idempotent.
 */
export function prepareCapabilityThread(): void {
  registerDocketModules();
  guardSignals();
  guardNestedWorkers();
}

import * as valibot from "valibot";
import * as docket from "../public.ts";

// The flag lives on globalThis, not in a module variable: plugin registration is per thread (per
// global object), and a second copy of this module in the same thread must see it too.
const REGISTERED = Symbol.for("docket.modules.registered");

/**
 * Serves `"docket"` and `"valibot"` to capability files from this process itself (docs/architecture.md), so a
 * user's file anywhere on disk loads with no node_modules. Call it in the main thread and in every
 * worker before the first capability file is imported. Idempotent.
 *
 * A virtual module wins over any `node_modules/valibot` above the user's file, so every capability
 * shares this process's one valibot: schemas a user builds are the ones docket converts and checks.
 */
export function registerDocketModules(): void {
  const global = globalThis as { [REGISTERED]?: true };
  // Under Node (the Node adapter's bundle) there is no plugin API: only built-ins load there.
  if (global[REGISTERED] || typeof Bun === "undefined") return;
  // Spread into plain objects once: the module namespace objects themselves are exotic and frozen.
  const docketExports: Record<string, unknown> = { ...docket };
  const valibotExports: Record<string, unknown> = { ...valibot };
  Bun.plugin({
    name: "docket-modules",
    setup(build) {
      build.module("docket", () => ({ exports: docketExports, loader: "object" }));
      build.module("valibot", () => ({ exports: valibotExports, loader: "object" }));
    },
  });
  global[REGISTERED] = true;
}

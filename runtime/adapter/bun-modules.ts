import { readFileSync } from "node:fs";
import * as valibot from "valibot";
import { markPinsServed, pinnedText } from "../capability/pinned-sources.ts";
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
      // A capability file imported with the text docket read of it (capability/pinned-sources.ts).
      // A pin gone by the time the runtime asks (never, in docket's own use) reads the disk.
      build.onLoad({ filter: /\?docket_pin=/ }, (args) => {
        const file = args.path.slice(0, args.path.indexOf("?docket_pin="));
        // As the runtime loads them itself: JSX is allowed in a .js file, not in a .ts one.
        return { contents: pinnedText(args.path) ?? readFileSync(file, "utf8"), loader: file.endsWith(".js") ? "jsx" : "ts" };
      });
    },
  });
  markPinsServed();
  global[REGISTERED] = true;
}

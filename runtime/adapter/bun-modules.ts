import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import * as valibot from "valibot";
import type { ImportScanner, LocalImport } from "../capability/capability-sources.ts";
import { markPinsServed, MISSING, pinnedText } from "../capability/pinned-sources.ts";
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
      // (A local module a handler imports later, its pin gone by then, reads the disk too.)
      build.onLoad({ filter: /\?docket_pin=/ }, (args) => {
        const file = args.path.slice(0, args.path.indexOf("?docket_pin="));
        if (args.path.endsWith(`?docket_pin=${MISSING}`)) {
          const message = `Cannot find module ${JSON.stringify(file)}: it did not exist, or could not be read, when docket read the capability that imports it (docket reads it again at the next reload)`;
          return { contents: `throw new Error(${JSON.stringify(message)});`, loader: "js" };
        }
        return { contents: pinnedText(args.path) ?? readFileSync(file, "utf8"), loader: loaderOf(file) };
      });
    },
  });
  markPinsServed(localImportScanner);
  global[REGISTERED] = true;
}

/** As the runtime loads them itself: JSX is allowed in a .js file, not in a .ts one. */
function loaderOf(file: string): "ts" | "tsx" | "jsx" | "js" {
  if (file.endsWith(".tsx")) return "tsx";
  if (file.endsWith(".js") || file.endsWith(".jsx")) return "jsx";
  if (file.endsWith(".mjs")) return "js";
  return "ts";
}

/** Script files docket serves pinned; others (JSON, text, CommonJS `.cjs`) are imported as the runtime finds them. */
const PINNABLE = /\.(ts|tsx|mts|js|jsx|mjs)$/;

const transpilers = new Map<string, InstanceType<typeof Bun.Transpiler>>();

/**
 * A module's local imports (capability/capability-sources.ts): `import` statements, `export … from`
 * and literal `import()` whose specifier is a path (`./`, `../`, `/`) the runtime resolves to a
 * script file outside node_modules. Type-only imports are left out (they are erased); so is a
 * text that does not parse (its import fails on its own, with the line).
 */
const localImportScanner: ImportScanner = {
  localImports(text, path) {
    const loader = loaderOf(path);
    let transpiler = transpilers.get(loader);
    if (!transpiler) transpilers.set(loader, (transpiler = new Bun.Transpiler({ loader })));
    let scanned: Array<{ path: string; kind: string }>;
    try {
      scanned = transpiler.scanImports(text);
    } catch {
      return [];
    }
    const found = new Map<string, LocalImport>();
    for (const { path: specifier, kind } of scanned) {
      if (kind !== "import-statement" && kind !== "dynamic-import") continue;
      if (!/^\.{0,2}\//.test(specifier) || found.has(specifier)) continue;
      let resolved: string;
      try {
        resolved = Bun.resolveSync(specifier, dirname(path));
      } catch {
        // Not there now: served as missing, whatever is written there before a thread asks.
        found.set(specifier, { specifier, path: resolve(dirname(path), specifier), missing: true });
        continue;
      }
      if (!PINNABLE.test(resolved) || resolved.includes("/node_modules/")) continue;
      found.set(specifier, { specifier, path: resolved });
    }
    return [...found.values()];
  },
};

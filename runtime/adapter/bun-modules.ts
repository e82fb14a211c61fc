import * as valibot from "valibot";
import { DATA_MARK, MISSING, type ImportScanner } from "../capability/capability-sources.ts";
import { dataExports, type DataKind } from "../capability/data-imports.ts";
import { markPinsServed, pinnedText } from "../capability/pinned-sources.ts";
import { unpinnedLoadRefusal } from "../capability/_unpinned-load.ts";
import * as docket from "../public.ts";
import { inDocketWords } from "../execution/thrown.ts";
import { compileOptionsOf, jsxRuntimeSourceOf, type CompileOptions } from "../capability/compile-options.ts";
import { compiledText } from "./_compiled-text.ts";

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
      // A local script a capability's code asks for by a name docket could not read (computed,
      // import.meta.require, a made require): refused, never loaded from disk unpinned
      // (capability/_unpinned-load.ts). Asked of every resolution: only one made by a pinned
      // module, for a name its text does not hold, goes further than a look-up.
      build.onResolve({ filter: /.*/ }, (args) => {
        if (resolvingOurselves) return undefined;
        const refusal = unpinnedLoadRefusal(args.path, args.importer, resolveOurselves);
        if (refusal !== null) throw refusal;
        return undefined;
      });
      // A capability file and its local modules imported with the texts docket read of them
      // (capability/pinned-sources.ts); never the disk in their place.
      build.onLoad({ filter: /\?docket_pin=/ }, (args) => {
        const file = args.path.slice(0, args.path.indexOf("?docket_pin="));
        if (args.path.endsWith(`?docket_pin=${MISSING}`)) {
          // Thrown here, not by the module's text: an `import { fmt }` of a text that exports
          // nothing fails at linking first, as "Export named 'fmt' not found", hiding why.
          throw inDocketWords(new Error(`Cannot find module ${JSON.stringify(file)}: it did not exist, or could not be read, when docket read the capability that imports it (docket reads it again at the next reload)`));
        }
        const [text, asRead] = pinnedOrSibling(args.path, file);
        if (text === undefined) {
          // Let go of after long editing (pinned-sources.ts): the disk may hold another text now.
          throw inDocketWords(new Error(`docket no longer holds the text of ${JSON.stringify(file)} it read for this version of the capability (the oldest texts are let go after many edits), so it is not imported from disk in its place; restart the server`));
        }
        // Data (JSON, text) is served as its value, whatever attributes the import was written with.
        const data = args.path.indexOf(DATA_MARK);
        if (data !== -1) return { exports: dataExports(args.path.slice(data + DATA_MARK.length) as DataKind, text), loader: "object" };
        return compiledText(text, loaderOf(asRead), compileOptionsOf(asRead));
      });
    },
  });
  markPinsServed(localImportScanner);
  global[REGISTERED] = true;
}

/** Set while the guard resolves a name itself: the runtime's resolver asks the plugin again. */
let resolvingOurselves = false;

function resolveOurselves(specifier: string, fromDir: string): string | null {
  resolvingOurselves = true;
  try {
    return Bun.resolveSync(specifier, fromDir);
  } catch {
    return null;
  } finally {
    resolvingOurselves = false;
  }
}

/**
 * The pinned text of a module, and the file it was read from. The runtime resolves an import of
 * `x.js` to `x.ts` when both exist (TypeScript's convention), so a pinned `x.js` can reach here as
 * `x.ts` with the `.js` text's pin: found under the JavaScript name it was pinned by.
 */
function pinnedOrSibling(specifier: string, file: string): [text: string | undefined, file: string] {
  const text = pinnedText(specifier);
  if (text !== undefined) return [text, file];
  const script = JS_OF_TS.find(([ts]) => file.endsWith(ts));
  if (!script) return [undefined, file];
  const sibling = `${file.slice(0, -script[0].length)}${script[1]}`;
  return [pinnedText(`${sibling}${specifier.slice(file.length)}`), sibling];
}

const JS_OF_TS: Array<[ts: string, js: string]> = [
  [".tsx", ".jsx"],
  [".mts", ".mjs"],
  [".cts", ".cjs"],
  [".ts", ".js"],
];

/** As the runtime loads them itself: JSX is allowed in a .js file, not in a .ts one. */
function loaderOf(file: string): "ts" | "tsx" | "jsx" | "js" {
  if (file.endsWith(".tsx")) return "tsx";
  if (file.endsWith(".js") || file.endsWith(".jsx")) return "jsx";
  if (file.endsWith(".mjs")) return "js";
  return "ts";
}

const transpilers = new Map<string, InstanceType<typeof Bun.Transpiler>>();

function transpilerFor(path: string): InstanceType<typeof Bun.Transpiler> {
  const loader = loaderOf(path);
  let transpiler = transpilers.get(loader);
  if (!transpiler) transpilers.set(loader, (transpiler = new Bun.Transpiler({ loader })));
  return transpiler;
}

/**
 * A transpiler that compiles as the runtime does under `options` (its decorators, its JSX) and
 * drops what TypeScript drops when it runs a file: an import used only as a type or not at all
 * (`import { StringValue } from "ms"`), which the runtime never loads — counted, it refused a
 * capability whose package was uninstalled although a fresh process ran it (third checking
 * tester, session 46). JavaScript keeps every import it writes.
 */
const compilingTranspilers = new Map<string, InstanceType<typeof Bun.Transpiler>>();
function compilingTranspilerFor(loader: "ts" | "tsx" | "jsx", options: CompileOptions): InstanceType<typeof Bun.Transpiler> {
  const tsconfig = JSON.stringify({ compilerOptions: options });
  const key = `${loader}\0${tsconfig}`;
  let transpiler = compilingTranspilers.get(key);
  if (!transpiler) compilingTranspilers.set(key, (transpiler = new Bun.Transpiler({ loader, trimUnusedImports: loader !== "jsx", tsconfig })));
  return transpiler;
}

/**
 * A require that is a whole statement at the top of compiled code, as TypeScript's `import name =
 * require("…")` compiles: unindented, so in no block (a try's is indented).
 */
const TOP_LEVEL_REQUIRE = /^(?:export )?(?:const|let|var) [A-Za-z_$][\w$]* = require\("([^"\n]+)"\);$/gm;

/** The specifiers of `import` and `export … from` statements of a scan, but the runtime's own helpers (`bun:wrap`). */
function importStatements(scanned: Array<{ path: string; kind: string }>): string[] {
  return scanned.flatMap(({ path: specifier, kind }) => (kind === "import-statement" && specifier !== "bun:wrap" ? [specifier] : []));
}

/**
 * How docket finds a module's local imports (capability/capability-sources.ts): Bun's own scan of
 * the text (type-only imports are left out: they are erased) and Bun's own resolution.
 */
const localImportScanner: ImportScanner = {
  specifiers(text, path) {
    try {
      // scanImports does not take a `#!` line, which the runtime skips: the same length of comment.
      return transpilerFor(path)
        .scanImports(text.startsWith("#!") ? `//${text.slice(2)}` : text)
        .flatMap(({ path: specifier, kind }) => (IMPORT_KINDS.has(kind) ? [specifier] : []));
    } catch {
      // It does not parse: its import fails on its own, with the line.
      return null;
    }
  },
  staticImports(text, path) {
    try {
      const source = text.startsWith("#!") ? `//${text.slice(2)}` : text;
      const loader = loaderOf(path);
      if (loader === "js") return importStatements(transpilerFor(path).scanImports(source));
      // What the module compiles to under its tsconfig.json: an import kept only for decorator
      // metadata counts (legacy decorators only, as the runtime compiles them: _compiled-text.ts),
      // and JSX becomes calls of its runtime, which the runtime imports itself (the scan of the
      // text alone saw neither: fourth checking tester, session 46).
      const options = compileOptionsOf(path);
      const compiling = options.experimentalDecorators === true ? options : { ...options, emitDecoratorMetadata: undefined };
      const compiled = compilingTranspilerFor(loader, compiling).transformSync(source);
      const scanned = transpilerFor("compiled.mjs").scanImports(compiled);
      const imports = importStatements(scanned);
      // TypeScript's `import x = require("pkg")`, compiled to a statement of its own at the top
      // level (never in a try): it loads with the module (checking tester, session 47). Read from
      // the compiled text, where a comment that mentions one is gone (third checking tester).
      // A line of a template that reads like one is no require: the runtime's scan must see it too.
      const required = new Set(scanned.flatMap(({ path: specifier, kind }) => (kind === "require-call" ? [specifier] : [])));
      for (const [, specifier] of compiled.matchAll(TOP_LEVEL_REQUIRE)) if (required.has(specifier!)) imports.push(specifier!);
      // Whether it holds JSX, as the runtime's own scan says (it names the default runtime then).
      const holdsJsx = loader !== "ts" && transpilerFor(path).scanImports(source).some(({ path: specifier, kind }) => kind === "require-call" && /\/jsx(?:-dev)?-runtime$/.test(specifier));
      const jsxSource = holdsJsx ? jsxRuntimeSourceOf(text, options) : null;
      if (jsxSource !== null) imports.push(`${jsxSource}/jsx-dev-runtime`);
      return imports;
    } catch {
      return null;
    }
  },
  esModule(text, path) {
    try {
      const { imports, exports } = transpilerFor(path).scan(text);
      return exports.length > 0 || imports.some((i) => i.kind === "import-statement");
    } catch {
      return null;
    }
  },
  resolve(specifier, fromDir) {
    try {
      return Bun.resolveSync(specifier, fromDir);
    } catch {
      return null;
    }
  },
};

const IMPORT_KINDS = new Set(["import-statement", "dynamic-import", "require-call"]);

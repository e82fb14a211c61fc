// `npm run build`: compiles the CLI and the pool's worker entry into the one binary dist/docket.
import type { BunPlugin } from "bun";
import { existsSync, realpathSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pkg from "../package.json" with { type: "json" };
import { hostTarget, type BuildStamp } from "../runtime/version.ts";
import { declarationsDigest, generateDeclarations, type DeclarationFiles } from "./declarations.ts";

/** The CLI's main, the binary's entry point. */
export const CLI_ENTRY = fileURLToPath(new URL("../runtime/cli/main.ts", import.meta.url));
/** The worker entry; the pool finds it in the binary at `new URL("./worker-entry.ts", import.meta.url)`. */
export const WORKER_ENTRY = fileURLToPath(new URL("../runtime/worker/worker-entry.ts", import.meta.url));
/** The guard preloaded into threads a handler starts; found in the binary beside the worker entry (runtime/worker/_own-process.ts). */
export const WORKER_GUARD_ENTRY = fileURLToPath(new URL("../runtime/worker/worker-guard.ts", import.meta.url));
/** Every entry besides the CLI's main that the binary must hold at its root. */
export const WORKER_ENTRIES = [WORKER_ENTRY, WORKER_GUARD_ENTRY];
/** Where `npm run build` writes the binary. */
export const BINARY = fileURLToPath(new URL("../dist/docket", import.meta.url));

/** Options of `compileDocket`. */
export interface CompileOptions {
  /** The main entry first, then the worker entry (and any other entry a `new Worker` names). */
  entrypoints: string[];
  outfile: string;
  /** Bundler plugins, e.g. a test's stand-in for a module. */
  plugins?: BunPlugin[];
  /** Another platform to compile for (scripts/release.ts); this machine's when left out. */
  target?: { name: string; bun: Bun.Build.CompileTarget };
  /** What `docket --version` names; the repository's current commit when left out. */
  commit?: string;
  /** The editor types to embed, when the caller made them already (a release compiles one per platform). */
  declarations?: DeclarationFiles;
  /** Settings other than the shipped ones, for bench/release-binaries.ts to compare (bench/RESULTS.md). */
  tuning?: { bytecode?: boolean; minify?: boolean };
}

/**
 * The checkout's commit, 12 hex digits, `+dirty` when tracked files changed; `unknown` outside git:
 * without git installed (a source tarball built in a slim image), and in a folder that is not
 * its own repository's top (sources unpacked inside another project, whose commit it is not).
 */
export function gitCommit(cwd: string = fileURLToPath(new URL("..", import.meta.url))): string {
  const git = (args: string[]) => {
    try {
      return Bun.spawnSync(["git", ...args], { cwd, env: process.env, stdout: "pipe", stderr: "ignore" });
    } catch {
      // No git on PATH: spawning it throws.
      return null;
    }
  };
  const top = git(["rev-parse", "--show-toplevel"]);
  if (top === null || top.exitCode !== 0 || realpathSync(top.stdout.toString().trim()) !== realpathSync(cwd)) return "unknown";
  const head = git(["rev-parse", "--short=12", "HEAD"]);
  if (head === null || head.exitCode !== 0) return "unknown";
  const dirty = git(["diff", "--quiet", "HEAD", "--"])?.exitCode !== 0;
  return `${head.stdout.toString().trim()}${dirty ? "+dirty" : ""}`;
}

/**
 * Compiles entry points into one standalone executable.
 *
 * Layout: `naming.entry = "[name].[ext]"` puts every entry at the root of Bun's embedded file
 * system, beside the main entry (`/$bunfs/root/<outfile name>`), whose path is what
 * `import.meta.url` is in every bundled module. So `new URL("./worker-entry.ts", import.meta.url)`
 * in runtime/worker/pool.ts names the bundled worker, exactly as it names the source file when
 * run from source. Without the flat naming, entries keep their folders relative to their common
 * ancestor (`/$bunfs/root/worker/worker-entry.ts`) and the URL misses.
 */
export async function compileDocket(options: CompileOptions): Promise<{ outfile: string; bytes: number; ms: number }> {
  const started = performance.now();
  const stamp: BuildStamp = { commit: options.commit ?? gitCommit(), target: options.target?.name ?? hostTarget() };
  // The editor types `docket types` writes (runtime/cli/editor-types.ts) travel inside the binary.
  const declarations = options.declarations ?? generateDeclarations();
  const result = await Bun.build({
    entrypoints: options.entrypoints,
    target: "bun",
    // Precompiled bytecode cut `docket --version` from ~128 to ~79 ms and a `docket run` by
    // 25–40% here; bytecode needs ESM output to keep the CLI's top-level await.
    format: "esm",
    bytecode: options.tuning?.bytecode ?? true,
    minify: options.tuning?.minify ?? false,
    naming: { entry: "[name].[ext]" },
    // Shared chunks load only when imported: without splitting, every node: built-in that any
    // command imports loads at start. Measured here: --version 64 → 47 ms, a no-op run 124 → 112 ms.
    splitting: true,
    plugins: options.plugins,
    define: {
      DOCKET_DECLARATIONS: JSON.stringify(declarations),
      DOCKET_TYPES_STAMP: JSON.stringify(`docket ${pkg.version} ${declarationsDigest(declarations)}`),
      // `docket --version` names the build (runtime/version.ts); from source the name is undeclared.
      __DOCKET_BUILD__: JSON.stringify(stamp),
    },
    compile: {
      // Bun refuses `target: undefined`: left out, it compiles for this machine.
      ...(options.target ? { target: options.target.bun } : {}),
      outfile: options.outfile,
      // The binary runs in users' checkouts: their .env and bunfig.toml (which can preload code)
      // are theirs, not docket's configuration.
      autoloadDotenv: false,
      autoloadBunfig: false,
      // Capability files import the checkout's own packages (yaml, @octokit/rest, …). Bun ≥ 1.3.9
      // compiles binaries that read no package.json at run time, so no package's `exports`/`main`
      // resolves (oven-sh/bun#27058): turn that reading back on, as `bun run` does it.
      autoloadPackageJson: true,
      // And their tsconfig.json: path aliases (`@/lib/x`) and JSX options (`jsxImportSource`)
      // resolve as under `bun run`, not as in a binary that reads none (a tester's finding).
      autoloadTsconfig: true,
    },
  });
  if (!result.success) {
    throw new AggregateError(result.logs, `Could not compile ${options.outfile}:\n${result.logs.map(String).join("\n")}`);
  }
  return { outfile: options.outfile, bytes: statSync(options.outfile).size, ms: performance.now() - started };
}

if (import.meta.main) {
  if (!existsSync(CLI_ENTRY)) {
    console.error(`Cannot build: ${CLI_ENTRY} does not exist yet.`);
    process.exit(1);
  }
  const built = await compileDocket({ entrypoints: [CLI_ENTRY, ...WORKER_ENTRIES], outfile: BINARY });
  console.log(`Built ${built.outfile}: ${(built.bytes / 1024 / 1024).toFixed(1)} MiB in ${(built.ms / 1000).toFixed(2)} s`);
}

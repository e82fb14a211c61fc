import { existsSync, readdirSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import type { CapabilityDef } from "./declaration.ts";
import { importCapabilityFile, importPreparedFile, capabilityFolder, prepareCapabilityFile, type CapabilityProblem, type ImportCapabilityOptions, type ImportedCapabilityFile } from "./inspect.ts";
import type { CapabilitySources } from "./capability-sources.ts";
import { CapabilityRegistry } from "./registry.ts";
import { caseTwins } from "./_case-twin.ts";
import { lookalikeFiles } from "./_lookalike-files.ts";
import type { LoadError, RegisteredCapability } from "./registered.ts";

/** How to import a module: `(p) => import(p)` from the CLI, after the `docket` module is registered. */
export type ImportFile = (absPath: string) => Promise<unknown>;

/** Options of `discoverCapabilities`. */
export interface DiscoveryOptions {
  /** The checkout root; `<root>/capabilities` is loaded when it exists. */
  root: string;
  /** `--capabilities DIR` folders, absolute or relative to the process's working directory. */
  dirs: string[];
  /** The bundled built-ins, keyed by file name (`files.digest.ts`). */
  builtins: Record<string, CapabilityDef>;
  importFile: ImportFile;
  /**
   * The folder the built-ins were bundled from, when it exists on disk. Met again as a checkout
   * or `--capabilities` folder (docket serving its own checkout), its built-in files are not
   * loaded twice; its other files load as checkout files.
   */
  builtinDir?: string | null;
  /** How long one file may take to load (`load_timeout_ms`); past it the file is a load error. */
  loadTimeoutMs?: number;
  /** Imports that did not finish in time on an earlier load, kept across reloads (inspect.ts `hung`). */
  hung?: Set<string>;
  /** Tries each file in a worker before importing it here (inspect.ts `probe`); the server passes one. */
  probe?: ImportCapabilityOptions["probe"];
  /** Told what each file is made of once it is read (inspect.ts `onSources`). */
  onSources?: ImportCapabilityOptions["onSources"];
  /**
   * The files of the folders to load, when not all: `docket run` loads the one file it runs, so
   * that a broken or slow file elsewhere neither stops nor slows it. Default: every file.
   */
  only?: (file: string) => boolean;
}

/**
 * Builds the registry (docs/architecture.md): the built-ins first, then `<root>/capabilities/*.ts|*.js`,
 * then each `--capabilities DIR` in order; files sorted by name, folders not descended into.
 * A file that fails to load becomes a LoadError; a missing `<root>/capabilities` is fine, a
 * missing folder named explicitly is a LoadError.
 */
export async function discoverCapabilities(options: DiscoveryOptions): Promise<CapabilityRegistry> {
  const registry = new CapabilityRegistry();
  for (const name of Object.keys(options.builtins).sort()) {
    registry.add(options.builtins[name], { kind: "builtin", file: name });
  }
  // The folder the built-ins come from (met again when docket serves its own checkout, or a fork
  // of it): its files that are built-ins are not loaded twice, and any other file in it (a
  // `docket new hello.greet` inside this repository) loads like every checkout file.
  const builtinFolders = new Set<string>();
  const builtinDir = await realpathOrNull(options.builtinDir ?? null);
  if (builtinDir) builtinFolders.add(builtinDir);
  const root = resolve(options.root);
  if (existsSync(join(root, "runtime", "capability", "builtins.ts"))) {
    const own = await realpathOrNull(join(root, "capabilities"));
    if (own) builtinFolders.add(own);
  }

  const seen = new Set<string>();
  const folders = [{ dir: join(root, "capabilities"), explicit: false }, ...options.dirs.map((dir) => ({ dir: resolve(dir), explicit: true }))];
  for (const { dir, explicit } of folders) {
    const found = await capabilityFolder(dir);
    const real = await realpathOrNull(dir);
    if (found.kind === "unusable") {
      // Read after the folder's name, as a file's load error is ("capabilities it is a file, …").
      registry.addLoadError({ file: dir, line: null, column: null, reason: `it ${found.reason}${explicit ? " (a folder given with --capabilities)" : ""}` });
      continue;
    }
    if (found.kind === "absent" || real === null) {
      if (explicit) registry.addLoadError({ file: dir, line: null, column: null, reason: `--capabilities ${dir} is not a folder; give an existing folder of capability files` });
      continue;
    }
    const files = found.files;
    if (seen.has(real)) continue;
    seen.add(real);
    const only = options.only ?? (() => true);
    const skip = builtinFolders.has(real) ? (file: string) => basename(file) in options.builtins || !only(file) : (file: string) => !only(file);
    // Every entry of the folder, listed once: a file differing from another only by case cannot be loaded apart from it.
    const twins = caseTwins(readdirSync(real));
    registry.noteLookalikes(lookalikeFiles(real));
    const loading = files.filter((file) => !skip(file));
    const optionsOf = (file: string): ImportCapabilityOptions => ({ importFile: options.importFile, timeoutMs: options.loadTimeoutMs, hung: options.hung, probe: options.probe, onSources: options.onSources, caseTwin: twins.get(basename(file)) ?? null });
    // One file ahead: the next file is read and its trial begun (in a worker) while this thread
    // imports the one before, so that a file's two loads (its trial, then its import) cost the
    // start about one load each, not two. Imports stay one at a time and in order.
    const prepare = (i: number) => (i < loading.length ? prepareCapabilityFile(loading[i]!, optionsOf(loading[i]!)) : null);
    let next = prepare(0);
    for (let i = 0; i < loading.length; i++) {
      const prepared = await next!;
      if (!("ok" in prepared) && prepared.trial !== null) await prepared.trial;
      next = prepare(i + 1);
      addTo(registry, loading[i]!, await importPreparedFile(prepared, optionsOf(loading[i]!)));
    }
  }
  return registry;
}

/** What `docket run ./file.ts` gets: the capability, or why it did not load. */
export type LoadedCapabilityFile = { ok: true; capability: RegisteredCapability } | { ok: false; errors: LoadError[] };

/** Loads one capability file on its own, for `docket run ./path/to/file.ts`. */
export async function loadCapabilityFile(absPath: string, importFile: ImportFile, loadTimeoutMs?: number, probe?: (sources: CapabilitySources) => Promise<CapabilityProblem | null>): Promise<LoadedCapabilityFile> {
  const registry = new CapabilityRegistry();
  const capability = await loadInto(registry, resolve(absPath), { importFile, timeoutMs: loadTimeoutMs, probe });
  return capability ? { ok: true, capability } : { ok: false, errors: registry.loadErrors() };
}

async function loadInto(registry: CapabilityRegistry, file: string, options: ImportCapabilityOptions): Promise<RegisteredCapability | null> {
  return addTo(registry, file, await importCapabilityFile(file, options));
}

/** Adds what a file's import gave to the registry: its capability, its load error, or its parked trial. */
function addTo(registry: CapabilityRegistry, file: string, imported: ImportedCapabilityFile): RegisteredCapability | null {
  if (!imported.ok && "parked" in imported) {
    registry.park(file, imported.parked);
    return null;
  }
  if (!imported.ok) {
    const { line, column, reason, code, kept_out, detail } = imported.problem;
    registry.addLoadError({ file, line, column, reason, ...(kept_out ? { kept_out: code } : {}) }, detail);
    return null;
  }
  return registry.add(imported.value, { kind: "file", file }, { text: imported.text, version: imported.version });
}

async function realpathOrNull(path: string | null): Promise<string | null> {
  if (path === null) return null;
  try {
    return await realpath(path);
  } catch {
    return null;
  }
}

// Editor types with no npm install (docs/editor-types.md): `.docket/types/` holds the declaration
// files of "docket" and "valibot", and `capabilities/tsconfig.json` maps both names to them.
import type { CompileOptions } from "../capability/compile-options.ts";
import { targetFrom } from "../capability/alias-targets.ts";
import { existsSync, mkdirSync, readdirSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { ensureDocketDir } from "../server/lease.ts";
import { readRegularFileText } from "../store/regular-file-text.ts";
import { DOCKET_VERSION } from "../version.ts";

// Both are defined by the build (scripts/build.ts); running from source they are not.
declare const DOCKET_DECLARATIONS: Record<string, string> | undefined;
declare const DOCKET_TYPES_STAMP: string | undefined;

/** Where the declaration files live, relative to the checkout root. */
export const TYPES_DIR = join(".docket", "types");
/** The file naming the build the declaration files came from. */
const STAMP_FILE = "VERSION";

/**
 * What `.docket/types/VERSION` holds when the files are this build's: the version and a digest of
 * the files themselves. Running from source the digest is unknown without making the files, so
 * the stamp says "source": `docket types` refreshes them after an edit of the public API.
 */
export function typesStamp(): string {
  return typeof DOCKET_TYPES_STAMP === "string" ? DOCKET_TYPES_STAMP : `docket ${DOCKET_VERSION} (source)`;
}

/** The declaration files, by path under `.docket/types/`: embedded in the binary, or made from source. */
export async function declarationFiles(): Promise<Record<string, string>> {
  if (typeof DOCKET_DECLARATIONS !== "undefined") return DOCKET_DECLARATIONS;
  // Running from source: make them with this repository's TypeScript. The specifier is a
  // variable so that the build never bundles the build tooling into the binary.
  const script = "../../scripts/declarations.ts";
  const { generateDeclarations } = (await import(script)) as { generateDeclarations(): Record<string, string> };
  return generateDeclarations();
}

/**
 * True when `<root>/.docket/types/` holds this build's declaration files, whole: the stamp names
 * this build, and every file it lists has the size written. A file deleted or emptied by hand (a
 * clean-up tool, a write cut short by a full disk) is missing types too, which tsc reports as
 * "is not a module" in every capability file.
 */
export function typesAreCurrent(root: string): boolean {
  try {
    const [stamp, ...listed] = readRegularFileText(join(root, TYPES_DIR, STAMP_FILE)).trimEnd().split("\n");
    if (stamp?.trim() !== typesStamp() || listed.length === 0) return false;
    return listed.every((line) => {
      const space = line.indexOf(" ");
      return statSync(join(root, TYPES_DIR, line.slice(space + 1))).size === Number(line.slice(0, space));
    });
  } catch {
    return false;
  }
}

/** The stamp file's text: the stamp, then one line per file, its size in bytes and its path under `.docket/types/`. */
function stampText(files: Record<string, string>): string {
  return `${typesStamp()}\n${Object.entries(files)
    .map(([name, text]) => `${Buffer.byteLength(text)} ${name}\n`)
    .join("")}`;
}

/**
 * (Re)writes `<root>/.docket/types/` whole: into a fresh folder first, then swapped in by rename,
 * so an editor (or a second docket writing at the same moment) never reads half a tree. The
 * stamp is written last. Returns the folder.
 */
export async function writeEditorTypes(root: string): Promise<string> {
  const files = await declarationFiles();
  ensureDocketDir(root);
  const target = join(root, TYPES_DIR);
  removeLeftovers(target);
  const fresh = `${target}.new-${process.pid}-${Date.now()}`;
  try {
    // Private like the rest of .docket/ (docs/security.md): folders 0700, files 0600.
    for (const [name, text] of Object.entries(files)) {
      const path = join(fresh, name);
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(path, text, { mode: 0o600 });
    }
    writeFileSync(join(fresh, STAMP_FILE), stampText(files), { mode: 0o600 });
    const old = `${target}.old-${process.pid}-${Date.now()}`;
    try {
      renameSync(target, old);
    } catch (error) {
      // Nothing there yet, or another docket moved it away a moment ago: either way, ours goes in.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    try {
      renameSync(fresh, target);
    } catch (error) {
      // Another docket swapped its own copy in first: the same files, keep that one.
      if (!existsSync(target)) throw error;
    }
    rmSync(old, { recursive: true, force: true });
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
  return target;
}

/** A writer killed mid-way leaves `types.new-*` / `types.old-*` beside the folder; a minute later they are litter. */
function removeLeftovers(target: string): void {
  const folder = dirname(target);
  const prefix = `${basename(target)}.`;
  for (const name of readdirSync(folder)) {
    if (!name.startsWith(`${prefix}new-`) && !name.startsWith(`${prefix}old-`)) continue;
    const path = join(folder, name);
    try {
      if (Date.now() - statSync(path).mtimeMs > 60_000) rmSync(path, { recursive: true, force: true });
    } catch {
      // Another docket removed it first.
    }
  }
}

/**
 * A path of the checkout (`root` and under) as seen from `folder`, relative, for a tsconfig.json
 * there: from where the folder is named and, when it is a link to elsewhere, from where it really
 * is. TypeScript reads a config's paths from the folder it was named by (`tsc -p capabilities`),
 * the runtime from the real one (it resolves a module's links first): with one target alone, the
 * aliases of a linked capabilities/ worked for one of them only (authoring tester, session 41).
 * Both are written, the named one first, as a paths entry's fallbacks.
 */
export function fromFolder(root: string, folder: string, path: string): string[] {
  const named = targetFrom(folder, path);
  let real: string;
  try {
    const realRoot = realpathSync(root);
    const inRoot = relative(root, path);
    real = targetFrom(realpathSync(folder), inRoot.startsWith("..") ? path : join(realRoot, inRoot));
  } catch {
    return [named];
  }
  return real === named ? [named] : [named, real];
}

/** Runtime type packages a capability file may want, as `types` names them: Node's and Bun's. */
const RUNTIME_TYPES = ["node", "bun"];

/**
 * The `capabilities/tsconfig.json` that `docket init` writes: strict, and no node_modules needed.
 * `types` lists the runtime type packages installed in the checkout (`@types/node`, `@types/bun`):
 * TypeScript 6 and later read only the ones listed (5 read every `@types` package it found), so
 * the list is written out for every version alike (docs/editor-types.md).
 */
export function editorTsconfig(root: string, aliases: Record<string, string[]> = {}, folder = join(root, "capabilities"), compile: CompileOptions = {}): string {
  // From the folder the config sits in: `../.docket/types/…` for capabilities/, deeper for a
  // `--capabilities` folder of a monorepo package.
  const typesOf = (file: string) => fromFolder(root, folder, join(root, TYPES_DIR, file));
  const types = RUNTIME_TYPES.filter((name) => existsSync(join(root, "node_modules", "@types", name, "package.json")));
  const config = {
    compilerOptions: {
      // ES2022, not ES2023: TypeScript 5.0–5.4 refuse the later target (the lib below they all know).
      target: "ES2022",
      module: "ESNext",
      moduleResolution: "bundler",
      // The web platform's globals (fetch, AbortSignal, console, URL, TextEncoder) without @types/node;
      // a file that imports node: modules needs `npm install -D @types/node` as usual.
      lib: ["ES2023", "DOM"],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      allowImportingTsExtensions: true,
      // docket compiles each file alone, as Bun does: a type re-exported without `export type`
      // passes a whole-program check and fails at load ("export 'Row' not found"). tsc refuses it too.
      isolatedModules: true,
      // Add "node" or "bun" here after `npm install -D @types/node` (or `@types/bun`).
      types,
      // Written by `docket types` (every docket command refreshes them when missing or stale).
      // And the checkout's own aliases (`aliases`: its root tsconfig.json's, rebased), which this
      // file's paths would otherwise hide from capability files: only the nearest config's count.
      paths: {
        ...aliases,
        docket: typesOf("docket/public.d.ts"),
        valibot: typesOf("valibot/index.d.ts"),
      },
      // The checkout's options that change what code does (its JSX source, legacy decorators):
      // this file is the nearest config of capability files, and docket runs them by it
      // (docs/authoring.md, "TypeScript settings"), as tsc checks them.
      ...compile,
    },
    // .tsx too once JSX is set: a capability may import a .tsx helper of its folder.
    include: compile.jsx !== undefined || compile.jsxImportSource !== undefined ? ["**/*.ts", "**/*.tsx"] : ["**/*.ts"],
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** The sentence a user reads when the types (or init's files) cannot be written: the error and what to check. */
export function cannotWrite(what: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // A linked or file .docket says itself what to do.
  if ((error as Error)?.name === "DocketDirError") return `Cannot ${what}: ${message}`;
  return `Cannot ${what}: ${message}. Check that capabilities/ and .docket/ in the checkout are folders you can write to.`;
}

/**
 * What every docket command does first: a checkout set up by `docket init` (it has
 * `capabilities/tsconfig.json`) whose types are missing or from another docket gets this build's,
 * so a teammate who cloned it and ran anything has types. Never fails the command: a checkout it
 * cannot write to gets one line on stderr.
 */
export async function refreshEditorTypes(root: string, warn: (line: string) => void, folders: string[] = []): Promise<void> {
  // capabilities/, or a `--capabilities` folder of the command that `docket init --capabilities` set up.
  const typed = [join(root, "capabilities"), ...folders].some((folder) => existsSync(join(folder, "tsconfig.json")));
  if (!typed || typesAreCurrent(root)) return;
  try {
    await writeEditorTypes(root);
  } catch (error) {
    warn(`docket: ${cannotWrite(`refresh the editor types in ${join(root, TYPES_DIR)}`, error)} Then run docket types.`);
  }
}

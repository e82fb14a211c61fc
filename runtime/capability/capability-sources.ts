// What a capability is made of: its file and every local module it imports, read once. Each
// thread imports this very text (pinned-sources.ts), and the capability's version is its digest,
// so a helper edited after docket read it can neither run unseen nor leave a stale module behind
// (docs/authoring.md, "Versions"; docs/containment.md, "Loading").

import { createHash } from "node:crypto";
import { CapabilityError } from "./capability-error.ts";
import { fileVersion } from "./capability-version.ts";
import { readRegularFileText } from "./open-regular-file.ts";

/**
 * An import of a local module, as written (`./_helper.ts`), and where it resolves. `missing`:
 * it resolved to nothing (or could not be read) when docket read the capability, and `path` is
 * where it would be: the import is served as missing, so that no thread imports a text of it
 * written later, that no trial saw.
 */
export interface LocalImport {
  specifier: string;
  path: string;
  missing?: true;
}

/** One module of a capability's source: where it is, the text read, the local modules it imports. */
export interface SourceModule {
  path: string;
  text: string;
  imports: LocalImport[];
  /** The digest of this module and everything it imports, local: one module instance per such whole. */
  key: string;
}

/** A capability file's source as read once: the file first, then every local module it reaches. */
export interface CapabilitySources {
  file: string;
  text: string;
  /** `sha256:…` of the file alone when it imports no local module, else of every module's path and text. */
  version: string;
  modules: SourceModule[];
}

/**
 * Finds the local imports of one module's text (Bun's transpiler and resolver; adapter/bun-modules.ts).
 * Only what docket can serve pinned: relative or absolute specifiers to script files outside
 * node_modules, in `import` statements and literal `import()` calls.
 */
export interface ImportScanner {
  localImports(text: string, path: string): LocalImport[];
}

/** How many local modules one capability may reach: past it, the file is a load error. */
export const MAX_SOURCE_MODULES = 500;
/** How many bytes of text they may hold together (the capability file included). */
export const MAX_SOURCE_BYTES = 32 * 1024 * 1024;

/**
 * Reads the local modules `text` of `file` imports, and theirs, once each. With no scanner (no
 * module plugin in this runtime) or for a CommonJS file, the file alone: imported as it is on disk.
 * A local module that cannot be found or read is served as missing, whatever is written there
 * later (pinned-sources.ts); one that is not a regular file (a FIFO, a device) is refused here,
 * since the runtime's read of it would block or never end.
 */
export async function readCapabilitySources(file: string, text: string, scanner: ImportScanner | null, isCommonJs: (text: string) => boolean): Promise<CapabilitySources> {
  const root: SourceModule = { path: file, text, imports: [], key: "" };
  const modules = new Map<string, SourceModule>([[file, root]]);
  if (scanner !== null && !isCommonJs(text)) {
    let bytes = Buffer.byteLength(text);
    const queue = [root];
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const imports: LocalImport[] = [];
      for (const local of scanner.localImports(next.text, next.path)) {
        if (local.missing) {
          imports.push(local);
          continue;
        }
        if (!modules.has(local.path)) {
          const helper = await readHelper(local.path, next.path, file);
          if (helper === null) {
            imports.push({ ...local, missing: true });
            continue;
          }
          // CommonJS (served pinned it would become an ES module): as the runtime finds it.
          if (isCommonJs(helper)) continue;
          bytes += Buffer.byteLength(helper);
          if (modules.size >= MAX_SOURCE_MODULES || bytes > MAX_SOURCE_BYTES) {
            throw new CapabilityError("invalid_input", `${file} imports more than ${MAX_SOURCE_MODULES} local modules or ${MAX_SOURCE_BYTES / 1024 / 1024} MiB of them; docket reads every local module a capability imports, so keep a capability's own code smaller, or put shared code in a package`);
          }
          const module: SourceModule = { path: local.path, text: helper, imports: [], key: "" };
          modules.set(local.path, module);
          queue.push(module);
        }
        imports.push(local);
      }
      next.imports = imports;
    }
  }
  const all = [...modules.values()];
  for (const module of all) module.key = digestOf(reachable(module, modules));
  return { file, text, version: root.key, modules: all };
}

/** A local module's text; null when it cannot be read (it is then served as missing). */
async function readHelper(path: string, importer: string, file: string): Promise<string | null> {
  try {
    return await readRegularFileText(path, { label: `${path} (imported by ${importer === file ? "the capability" : importer})` });
  } catch (error) {
    if (CapabilityError.is(error)) throw error;
    return null;
  }
}

/** Every module `from` reaches through its imports, itself included. */
function reachable(from: SourceModule, modules: Map<string, SourceModule>): SourceModule[] {
  const seen = new Set([from]);
  for (const module of seen) {
    for (const { path, missing } of module.imports) {
      const next = missing ? undefined : modules.get(path);
      if (next) seen.add(next);
    }
  }
  return [...seen];
}

/** A lone module's version is its text's (as a file that imports nothing always had); several: each path and text. */
function digestOf(modules: SourceModule[]): string {
  if (modules.length === 1) return fileVersion(modules[0]!.text);
  const hash = createHash("sha256");
  for (const module of [...modules].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    hash.update(module.path).update("\0").update(module.text).update("\0");
  }
  return `sha256:${hash.digest("hex").slice(0, 16)}`;
}

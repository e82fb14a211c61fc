import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { aliasConfigFiles } from "./alias-targets.ts";
import { isEmptyChange, type CatalogChange } from "./live-catalog.ts";
import { loadErrorReason, type LoadError } from "./registered.ts";
import type { LookalikeFile } from "./_lookalike-files.ts";
import type { PathLook } from "./path-looks.ts";
import { watchFolders, type FolderWatch, type WatchFoldersOptions } from "./watch-folders.ts";
import { plainText } from "../execution/text-sanitize.ts";

/** What {@link watchCapabilities} needs of a booted plane (runtime/boot.ts's `bootPlane` gives it). */
export interface ReloadablePlane {
  /**
   * Loads the capability folders again and swaps the registry whole; absent: no live reload.
   * `settled()`: whether the folders were quiet before the read and stayed so through it.
   * `held`: files whose failure it held back (catalog-reload.ts), read again once the folders are quiet.
   */
  reload?(settled?: () => boolean): Promise<CatalogChange & { held?: string[]; parked?: Promise<void> | null }>;
  /** The checkout root: its package.json and node_modules are watched too, for installs. */
  root?: string;
  /** The folders to watch for `reload`. */
  watchedFolders?: string[];
  /** Those folders as they were just before the catalog now served was read (watch-folders.ts, `lookedAt`). */
  watchedLook?: PathLook[];
  /** When that read began (Date.now()): the paths watched for installs count changes from then. */
  firstReadAt?: number;
  /** The folders of the local modules the capabilities import (watched too), as of the last load. */
  sourceFolders?(): string[];
}

/** Options of {@link watchCapabilities}. */
export interface WatchCapabilitiesOptions {
  /** One line at a time, for stderr. */
  log: (line: string) => void;
  /** Options of the folder watch (debounce, clock), for tests. */
  watchOptions?: WatchFoldersOptions;
}

/** One line for stderr about a file that looks like a capability file and is not loaded as one. */
export function lookalikeLine(file: LookalikeFile): string {
  return `docket does not load ${plainText(file.file)} as the capability ${plainText(file.id)}: ${file.reason}`;
}

/** One line for stderr about a file that did not load, with its place when known. */
export function loadErrorLine(error: LoadError): string {
  const where = error.line !== null ? `:${error.line}${error.column !== null ? `:${error.column}` : ""}` : "";
  // The process's own log: what the file threw is said here, never to a client.
  return `docket could not load ${plainText(error.file)}${where}: ${loadErrorReason(error)}`;
}

/**
 * Reloads the capabilities after a change in their folders, and says on stderr what changed and
 * which files now fail to load (docs/authoring.md, "Live reload"): `docket serve`, and `docket mcp`
 * when it serves alone. Null when the plane cannot reload.
 */
export function watchCapabilities(booted: ReloadablePlane, options: WatchCapabilitiesOptions): FolderWatch | null {
  const reload = booted.reload?.bind(booted);
  if (!reload || !booted.watchedFolders) return null;
  // Changes met during a reload join it and are answered with its one change: said once.
  let said: CatalogChange | null = null;
  // A helper outside the capability folders (`../lib/format.ts`) reloads what imports it too; one
  // first met by a reload is watched from when that reload began to read.
  // So do the configs that decide where their aliases lead (a root tsconfig.base.json they extend).
  // Folders whose install places are watched already (installPlaces): each is walked once.
  const placed = new Set<string>();
  const watchInstalls = (folders: readonly string[], since?: number) => {
    const fresh = folders.filter((folder) => !placed.has(folder));
    for (const folder of fresh) placed.add(folder);
    for (const place of installPlaces(booted.root, fresh)) watch.add(place, since);
  };
  const watchSources = (since?: number) => {
    const folders = booted.sourceFolders?.() ?? [];
    for (const folder of folders) watch.add(folder, since);
    watchInstalls(folders);
    for (const folder of [...booted.watchedFolders!, ...folders]) for (const config of aliasConfigFiles(folder)) watch.add(config, since);
  };
  const onChange = (quiet: boolean) => {
    const began = Date.now();
    // Settled: the folders were quiet for the debounce time before the read, and no change came since.
    reload(() => quiet && !watch.pending()).then(
      (change) => {
        watchSources(began);
        // A capability whose file failed or went missing mid-save is kept for now: read again once the folders are quiet.
        if ((change.held?.length ?? 0) > 0) watch.touch();
        // A file whose trial load was still running kept what was served of it: read again at its verdict.
        void change.parked?.then(() => watch.touch());
        if (change === said || isEmptyChange(change)) return;
        said = change;
        const parts = [
          change.added.length > 0 ? `added ${change.added.join(", ")}` : "",
          change.changed.length > 0 ? `changed ${change.changed.join(", ")}` : "",
          change.removed.length > 0 ? `removed ${change.removed.join(", ")}` : "",
        ].filter(Boolean);
        if (parts.length > 0) options.log(`docket reloaded capabilities: ${parts.join("; ")}`);
        for (const error of change.newErrors) options.log(loadErrorLine(error));
      },
      (error) => {
        // A folder the system refused to read (permissions, a folder gone mid-read) is its message; a bug of docket's, its stack.
        const system = typeof (error as NodeJS.ErrnoException)?.code === "string";
        options.log(`docket could not reload the capabilities: ${system ? `${(error as Error).message}; it tries again at the next change` : ((error as Error)?.stack ?? error)}`);
      },
    );
  };
  const watch = watchFolders(booted.watchedFolders, onChange, { onProblem: options.log, lookedAt: booted.watchedLook, ...options.watchOptions });
  // An install (package.json, node_modules' top level, or node_modules appearing) tries again the
  // files whose imports did not resolve (docs/authoring.md, "Packages installed while serving"); so
  // does a change of the root tsconfig.json, whose new alias the load error then names.
  // Counted from the first read: an install made while the server started (between that read and
  // now) is a change too, not where the watch begins.
  if (booted.root !== undefined) for (const name of ["package.json", "node_modules", "tsconfig.json"]) watch.add(join(booted.root, name), booted.firstReadAt);
  // ...and an install where a load error says to run it: the nearest package.json above a file
  // (a workspace's `packages/tools`, a --capabilities folder elsewhere) was never watched, and its
  // capability loaded only at the next edit (authoring checking tester, session 49).
  watchInstalls(booted.watchedFolders, booted.firstReadAt);
  watchSources();
  return watch;
}

/** How far up from a folder outside the checkout its install places are looked for. */
const INSTALL_LEVELS = 16;

/**
 * Where an install for files in `folders` lands: the package.json and node_modules of each folder
 * from each of them up to the checkout root (a workspace package's own, `packages/tools`), or, for
 * a folder outside the checkout, up to the nearest one holding a package.json (the folder a load
 * error's install advice names, see _missing-package.ts).
 */
export function installPlaces(root: string | undefined, folders: readonly string[]): string[] {
  const places = new Set<string>();
  for (const folder of folders) {
    const inside = root !== undefined && (folder === root || folder.startsWith(`${root}/`));
    let dir = folder;
    for (let level = 0; level < INSTALL_LEVELS; level++) {
      // node_modules folders of their own are no place to install into.
      if (!/\/node_modules(\/|$)/.test(dir)) {
        places.add(join(dir, "package.json"));
        places.add(join(dir, "node_modules"));
      }
      if (inside ? dir === root : existsSync(join(dir, "package.json"))) break;
      const up = dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  return [...places];
}

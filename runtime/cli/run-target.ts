// What a docket run's target names: a file or an id, the files loaded for it, the capability it
// is, and the load errors that are its own versus the rest of the checkout's.
import { existsSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import type { BootedPlane } from "../boot.ts";
import { BUILTINS } from "../capability/builtins.ts";
import { findCheckoutRoot } from "../capability/checkout.ts";
import { idNamedBy, isCapabilityId } from "../capability/capability-id.ts";
import { listCapabilityFiles } from "../capability/inspect.ts";
import type { LoadError } from "../capability/registered.ts";
import { annotation } from "./github-actions.ts";
import type { LocalRunOptions, RunOutput } from "./local-run-options.ts";
import { location } from "./run-reporter.ts";
import type { TerminalStyle } from "./_terminal.ts";
import { plainText } from "../execution/text-sanitize.ts";

/** `./check.ts`, `/abs/check.ts`, `checks/x.ts`: a file to run Deno-style, not an id. */
export function isCapabilityPath(target: string): boolean {
  return target.startsWith(".") || target.startsWith("/") || /\.(ts|js|mts|mjs)$/.test(target);
}

/**
 * The file a run's target names, absolute, or null for an id. An id may end like a file name
 * (`lint.js` is a valid id, and is served): named so with no such file, it is the id, where it was
 * refused as a missing file (authoring tester, session 41). `./lint.js` is always a file.
 */
export function targetFile(target: string, cwd: string): string | null {
  if (!isCapabilityPath(target)) return null;
  const path = resolve(cwd, target);
  if (target.startsWith(".") || target.startsWith("/") || !isCapabilityId(target) || existsSync(path)) return path;
  return null;
}

/**
 * Built-ins that read nothing of the checkout's capabilities (no `ctx.host()` catalog): run by id,
 * they load none of its files, so a broken, slow or hanging file there neither slows nor notes
 * them. Any other built-in (capabilities.verify, health.report read the host's catalog and its
 * load errors) loads every file, as a server would.
 */
const ALONE = new Set(["executions.demonstrate", "files.digest", "files.verify"]);

/**
 * Which files of the capability folders a run loads: only the one it runs. A file is named by
 * the id it declares (a mismatch is a load error), so `docket run team.deploy` needs
 * `team.deploy.ts` alone; a broken or slow file elsewhere (one whose top level hangs for
 * load_timeout_ms) then neither stops nor slows a CI step. A built-in that reads the catalog
 * loads every file (`capabilities.verify` checks every file, in CI); one that does not, none
 * (ALONE). So does an id no file is named after, so that the refusal can list what exists and
 * what did not load.
 */
export async function filesToLoad(options: LocalRunOptions, file: string | null): Promise<((path: string) => boolean) | undefined> {
  if (file !== null) return (path) => resolve(path) === file;
  const id = options.target;
  if (ALONE.has(id)) return () => false;
  if (Object.keys(BUILTINS).some((name) => name.replace(/\.[^.]+$/, "") === id)) return undefined;
  const named = (path: string) => idNamedBy(path) === id;
  const root = findCheckoutRoot(options.cwd);
  for (const dir of [join(root, "capabilities"), ...options.capabilityDirs.map((dir) => resolve(options.cwd, dir))]) {
    if (((await listCapabilityFiles(dir)) ?? []).some(named)) return named;
  }
  return undefined;
}

/**
 * The capability a target names, and the load errors that belong to it versus the rest of the
 * checkout. Run by id, the file named after it that did not load (when nothing else declares that
 * id) is the target's own: its load error is the run's refusal, not a note beside a not_found.
 */
export function locateTarget(plane: BootedPlane, target: string, file: string | null): { capabilityId: string | null; ownErrors: LoadError[]; otherErrors: LoadError[] } {
  const errors = plane.registry.loadErrors();
  if (file === null) {
    const ownErrors = plane.registry.get(target) ? [] : errors.filter((e) => idNamedBy(e.file) === target);
    return { capabilityId: ownErrors.length > 0 ? null : target, ownErrors, otherErrors: errors.filter((e) => !ownErrors.includes(e)) };
  }
  const capabilityId = plane.fileIds[0] ?? null;
  const own = (e: LoadError) => e.file === file;
  return { capabilityId, ownErrors: capabilityId ? [] : errors.filter(own), otherErrors: errors.filter((e) => !own(e)) };
}

/** The checkout's other broken capability files, said once: they do not stop this run (docs/architecture.md). */
export function reportLoadErrors(errors: LoadError[], root: string, gitHub: boolean, style: TerminalStyle, output: RunOutput): void {
  if (errors.length === 0) return;
  const shown = (file: string) => plainText(file.startsWith(root) ? relative(root, file) || file : file);
  const lines = errors.map((e) => {
    const d = { severity: "warning" as const, message: `capability file did not load: ${e.reason}`, file: shown(e.file), line: e.line ?? undefined, column: e.column ?? undefined };
    return gitHub ? annotation(d) : `${location(d)} ${e.reason}`;
  });
  // Counted by file: one file can have several problems, each on its own line.
  const files = new Set(errors.map((e) => e.file)).size;
  const head = `${files} capability file${files === 1 ? "" : "s"} did not load (the run goes on without ${files === 1 ? "it" : "them"}):`;
  output.stderr(`${gitHub ? lines.join("\n") : [style.yellow(head), ...lines.map((l) => `  ${l}`)].join("\n")}\n`);
}

// The runtime's side of pinning (docs/containment.md, "Loading"): a capability's code that asks the
// runtime for a local script by a name docket could not read in its text — computed at run time
// (`import(`${ctx.root}/lib/${name}.ts`)`, a name in a variable), or through a require docket does
// not see as one (`import.meta.require`, a require made by `createRequire` however it is named) —
// would load that file from disk as it is then: outside the version, unwatched, possibly beside
// the pinned text of the same file. The module plugin asks this before each resolution and
// refuses such a load, naming the file (adapter/bun-modules.ts).

import { dirname, isAbsolute } from "node:path";
import { insideFolder, PIN_MARK, realOrSelf } from "./capability-sources.ts";
import { CapabilityError } from "./capability-error.ts";
import { installedPackageDir, packageOf } from "./_missing-package.ts";
import { pinnedImporterLiterals } from "./pinned-sources.ts";

/**
 * Data docket documents as read from disk as the runtime finds it when named at run time: JSON.
 * Any other file may run as code, whatever its name says (`import(x + "/evil.txt", { with: {
 * type: "js" } })`: the plugin is not told the attributes), so it must not load unpinned.
 */
const READ_AS_FOUND = /\.json$/;

/** docket's own code (this file's folder's parent), and the binary's bundle: a capability may reach it, it is no part of the capability. */
const OWN_ROOT = `${dirname(import.meta.dir)}/`;

/**
 * Why the runtime must not load what `specifier` names for `importer`, or null when it may: the
 * importer is a module imported pinned as code in this thread, the specifier is none of the ones
 * its text names as written, and it resolves to a file of the user's own outside node_modules
 * and docket's own code (a package, even one linked from the project's folders, stays a package,
 * as far as its own folder) that is not JSON: a file of any other name may be run as code.
 * `resolve` is the runtime's resolver, or null when it finds nothing (the import then fails on
 * its own). A CapabilityError, `not_runnable`: the client of an execution that meets it is told
 * why, as of a load error, not only the server's log.
 */
export function unpinnedLoadRefusal(specifier: string, importer: string, resolve: (specifier: string, fromDir: string) => string | null): CapabilityError | null {
  if (specifier.includes(PIN_MARK)) return null;
  const literals = pinnedImporterLiterals(importer);
  if (literals === undefined || literals.has(specifier)) return null;
  // docket serves these itself (adapter/bun-modules.ts).
  if (specifier === "docket" || specifier === "valibot" || specifier.startsWith("valibot/")) return null;
  const fromDir = dirname(realOrSelf(importer));
  const resolved = resolve(specifier, fromDir)?.replace(/\?.*$/, "") ?? null;
  if (resolved === null || !isAbsolute(resolved) || READ_AS_FOUND.test(resolved)) return null;
  if (/[\\/]node_modules[\\/]|[\\/]\.bun[\\/]install[\\/]cache[\\/]/.test(resolved) || resolved.startsWith(OWN_ROOT) || resolved.startsWith("/$bunfs/")) return null;
  if (!/^[./#]/.test(specifier) && !isAbsolute(specifier)) {
    // Only what lies inside the package's own folder: `ms/../../lib/x.ts` climbs out of it.
    const pkg = packageOf(specifier);
    const dir = pkg === null ? null : installedPackageDir(pkg, fromDir);
    if (dir !== null && insideFolder(realOrSelf(resolved), realOrSelf(dir))) return null;
  }
  const message = `docket refused to load ${resolved} from disk: ${importer} loads it by a name docket could not read in its text (computed at run time, held in a variable, or passed to import.meta.require or a require made with createRequire), so it would run the file as it is on disk now — not the text docket read and tried, not counted in the capability's version, not watched for edits; import it by a literal path (import * as rules from "./_rules.ts", or await import("./_rules.ts")) so that docket pins it, and choose among such modules in code`;
  return new CapabilityError("not_runnable", message, { context: { reason: "unpinned_import", file: resolved }, retryability: "never", outcome_certainty: "not_applied" });
}

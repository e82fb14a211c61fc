// Files in a capability folder that look like capability files but are not loaded as such: in a
// subfolder, or with an extension discovery does not take (docs/authoring.md). Named when someone
// asks for the capability one of them would declare, instead of a bare "not loaded".
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { CAPABILITY_ID_PATTERN } from "./capability-id.ts";
import { isCapabilityFileName } from "./inspect.ts";

/** A file that looks like the capability `id`'s, and why docket does not load it. */
export interface LookalikeFile {
  id: string;
  file: string;
  reason: string;
}

/** Extensions of modules the runtime imports that discovery does not take as capability files. */
const OTHER_EXTENSIONS = [".tsx", ".jsx", ".mts", ".cts", ".mjs", ".cjs"];

/** How many subfolders, and entries in each, are looked at: a capability folder is small; a huge one is not walked. */
const MAX_FOLDERS = 64;
const MAX_ENTRIES = 512;

/** The look-alike files of the capability folder `dir` (its real path), one level down; links to files count as files. */
export function lookalikeFiles(dir: string): LookalikeFile[] {
  const found: LookalikeFile[] = [];
  const entries = listed(dir);
  for (const entry of entries) {
    if (!entry.isFile() && !entry.isSymbolicLink()) continue;
    const named = misnamed(entry.name);
    if (named !== null) found.push({ id: named.id, file: join(dir, entry.name), reason: named.reason });
  }
  const folders = entries.filter((entry) => entry.isDirectory() && !/^[._]/.test(entry.name) && entry.name !== "node_modules").slice(0, MAX_FOLDERS);
  for (const folder of folders) {
    for (const entry of listed(join(dir, folder.name))) {
      if (!entry.isFile() && !entry.isSymbolicLink()) continue;
      const named = isCapabilityFileName(entry.name) ? { id: entry.name.replace(/\.(ts|js)$/, ""), reason: null } : misnamed(entry.name);
      if (named === null || !CAPABILITY_ID_PATTERN.test(named.id)) continue;
      const moved = `it is in the subfolder ${folder.name}/, and docket loads the capability files of a folder itself, not of its subfolders; move it up, or name the subfolder with --capabilities ${join(dir, folder.name)}`;
      // Named wrongly too (`caps/x.y.TS`): both are said (foundation tester, session 44).
      found.push({ id: named.id, file: join(dir, folder.name, entry.name), reason: named.reason === null ? moved : `${moved}; and ${named.reason}` });
    }
  }
  return found;
}

/**
 * The capability a file's name would declare and why docket does not load it by that name: an
 * extension discovery does not take (`.tsx`, `.mts`, in any case) or `.ts`/`.js` in another case
 * (`.TS`, `.Js`). Null for any other name.
 */
function misnamed(name: string): { id: string; reason: string } | null {
  const lower = name.toLowerCase();
  const ext = OTHER_EXTENSIONS.find((e) => lower.endsWith(e));
  if (ext !== undefined) {
    const id = name.slice(0, -ext.length);
    const written = name.slice(-ext.length);
    if (CAPABILITY_ID_PATTERN.test(id)) return { id, reason: `docket loads capability files named .ts or .js, not ${written}; rename it to ${id}.ts (the modules it imports may stay ${written})` };
  }
  // `.TS`, `.Js`: the extension in another case, which discovery does not take (foundation tester, session 44).
  const cased = /\.(ts|js)$/i.exec(name);
  const casedId = cased === null ? "" : name.slice(0, -cased[0].length);
  if (cased !== null && cased[0] !== cased[0].toLowerCase() && CAPABILITY_ID_PATTERN.test(casedId)) {
    return { id: casedId, reason: `its extension is ${cased[0]}, and docket loads capability files whose extension is .ts or .js in lower case; rename it to ${casedId}${cased[0].toLowerCase()}` };
  }
  return null;
}

function listed(dir: string) {
  try {
    return readdirSync(dir, { withFileTypes: true }).slice(0, MAX_ENTRIES);
  } catch {
    return [];
  }
}

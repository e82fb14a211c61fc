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

/** The look-alike files of the capability folder `dir` (its real path), one level down. */
export function lookalikeFiles(dir: string): LookalikeFile[] {
  const found: LookalikeFile[] = [];
  const entries = listed(dir);
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const ext = OTHER_EXTENSIONS.find((e) => entry.name.endsWith(e));
    const id = ext === undefined ? "" : entry.name.slice(0, -ext.length);
    if (ext !== undefined && CAPABILITY_ID_PATTERN.test(id)) {
      found.push({ id, file: join(dir, entry.name), reason: `docket loads capability files named .ts or .js, not ${ext}; rename it to ${id}.ts (the modules it imports may stay ${ext})` });
    }
    // `.TS`, `.Js`: the extension in another case, which discovery does not take (foundation tester, session 44).
    const cased = /\.(ts|js)$/i.exec(entry.name);
    const casedId = cased === null ? "" : entry.name.slice(0, -cased[0].length);
    if (cased !== null && cased[0] !== cased[0].toLowerCase() && CAPABILITY_ID_PATTERN.test(casedId)) {
      found.push({ id: casedId, file: join(dir, entry.name), reason: `its extension is ${cased[0]}, and docket loads capability files whose extension is .ts or .js in lower case; rename it to ${casedId}${cased[0].toLowerCase()}` });
    }
  }
  const folders = entries.filter((entry) => entry.isDirectory() && !/^[._]/.test(entry.name) && entry.name !== "node_modules").slice(0, MAX_FOLDERS);
  for (const folder of folders) {
    for (const entry of listed(join(dir, folder.name))) {
      const id = entry.name.replace(/\.(ts|js)$/, "");
      if (!entry.isFile() || !isCapabilityFileName(entry.name) || !CAPABILITY_ID_PATTERN.test(id)) continue;
      found.push({ id, file: join(dir, folder.name, entry.name), reason: `it is in the subfolder ${folder.name}/, and docket loads the capability files of a folder itself, not of its subfolders; move it up, or name the subfolder with --capabilities ${join(dir, folder.name)}` });
    }
  }
  return found;
}

function listed(dir: string) {
  try {
    return readdirSync(dir, { withFileTypes: true }).slice(0, MAX_ENTRIES);
  } catch {
    return [];
  }
}

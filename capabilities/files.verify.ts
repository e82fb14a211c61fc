import { capability, CapabilityError, openRegularFile, resolveInside, sha256File, type CapabilityContext } from "docket";
import * as v from "valibot";
import { relative, sep } from "node:path";

export default capability({
  id: "files.verify",
  title: "Verify files",
  description:
    "Checks files of the checkout against a sha256sum manifest (as files.digest writes it; paths relative to the checkout root). One diagnostic per changed, missing or unreadable file and per malformed line; fails with verification_failed when there is any. " +
    "With ignore_missing (like sha256sum --ignore-missing), listed files that are not there are passed over, so a download of one binary checks against a release's whole SHA256SUMS; at least one listed file must be there.",
  effect: "read",
  cancellable: true,
  errors: ["verification_failed"],
  input: v.object({
    manifest: v.pipe(v.string(), v.minLength(1), v.description("Path of the manifest in the checkout, relative to its root (sha256sum format).")),
    ignore_missing: v.optional(
      v.pipe(v.boolean(), v.description("Pass over listed files that do not exist instead of failing on them (sha256sum --ignore-missing); it still fails when none of them exists.")),
      false,
    ),
  }),
  output: v.object({
    files: v.pipe(v.number(), v.description("Files checked; every one matched.")),
    bytes: v.pipe(v.number(), v.description("Bytes hashed.")),
    ok: v.literal(true),
    missing: v.optional(v.pipe(v.number(), v.description("With ignore_missing: listed files that do not exist, passed over."))),
  }),
  examples: [{ manifest: "manifest.sha256" }, { manifest: "SHA256SUMS", ignore_missing: true }],
  async handler(input, ctx) {
    const manifestPath = await resolveInside(ctx.root, input.manifest, { label: "input.manifest" });
    const manifestName = toPosix(relative(ctx.root, manifestPath));
    const text = await readManifest(manifestPath, input.manifest, ctx.root);

    ctx.progress.step("parse", `Read ${manifestName}`);
    const entries: Entry[] = [];
    let malformed = 0;
    const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!.replace(/\r$/, "");
      if (line.trim() === "") continue;
      const entry = parseLine(line, i + 1);
      if (entry) entries.push(entry);
      else {
        malformed++;
        ctx.progress.diagnostic({ severity: "error", code: "malformed_line", file: manifestName, line: i + 1, message: `Line ${i + 1} of ${manifestName} is not a sha256sum line ("<64 hex digits>  <path>")` });
      }
    }
    if (entries.length === 0 && malformed === 0) {
      malformed++;
      ctx.progress.diagnostic({ severity: "error", code: "empty_manifest", file: manifestName, message: `${manifestName} lists no files` });
    }
    ctx.progress.stepDone("parse", malformed === 0, `${entries.length} files listed`);

    ctx.progress.step("check", "Compare each file's SHA-256");
    const counts = { mismatched: 0, missing: 0, unreadable: 0 };
    let bytes = 0;
    let checked = 0;
    let absent = 0;
    for (let i = 0; i < entries.length; i++) {
      if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
      const entry = entries[i]!;
      const problem = await checkEntry(entry, manifestName, ctx, input.ignore_missing);
      if (problem === "refused") malformed++;
      else if (problem === "absent") absent++;
      else if (typeof problem === "string") counts[problem]++;
      else {
        checked++;
        bytes += problem.bytes;
      }
      ctx.progress.progress(i + 1, entries.length, entry.path);
    }
    // As sha256sum --ignore-missing: a folder holding none of the listed files verified nothing.
    const noneHere = absent > 0 && absent === entries.length;
    if (noneHere) {
      ctx.progress.diagnostic({ severity: "error", code: "none_present", file: manifestName, message: `None of the ${entries.length} files ${manifestName} lists exists here, so nothing was verified` });
    }
    const failed = counts.mismatched + counts.missing + counts.unreadable + malformed + (noneHere ? 1 : 0);
    const passedOver = absent > 0 ? `; ${absent} listed not here, passed over` : "";
    ctx.progress.stepDone("check", failed === 0, failed === 0 ? `${checked === 1 ? "1 file matches" : `${checked} files match`}${passedOver}` : `${failed} problem${failed === 1 ? "" : "s"}`);

    if (failed > 0) {
      const parts = [
        counts.mismatched && `${counts.mismatched} changed`,
        counts.missing && `${counts.missing} missing`,
        counts.unreadable && `${counts.unreadable} unreadable`,
        malformed && `${malformed} bad manifest line${malformed === 1 ? "" : "s"}`,
        noneHere && "none of them here (ignore_missing)",
      ].filter(Boolean);
      throw new CapabilityError("verification_failed", `${manifestName} does not match the checkout: ${parts.join(", ")}; it lists ${entries.length === 1 ? "1 file" : `${entries.length} files`}; see the diagnostics`, {
        context: { files: entries.length, ...counts, malformed, ...(input.ignore_missing ? { absent } : {}) },
        suggestion: noneHere
          ? "Run it where the downloaded files are: the manifest's paths are relative to the checkout root (outside a git checkout, the folder docket runs in)."
          : "Restore the files listed in the diagnostics, or write a new manifest with files.digest if the changes are intended.",
      });
    }
    return { files: checked, bytes, ok: true as const, ...(input.ignore_missing ? { missing: absent } : {}) };
  },
});

interface Entry {
  hex: string;
  path: string;
  line: number;
}

const GNU_LINE = /^(\\)?([0-9a-fA-F]{64}) [ *](.+)$/;
const BSD_LINE = /^(\\)?SHA256 \((.+)\) = ([0-9a-fA-F]{64})$/;

/** Parses a GNU (`<hex>  <path>`, `*` for binary mode) or BSD tag (`SHA256 (<path>) = <hex>`) line. */
function parseLine(line: string, number: number): Entry | null {
  const gnu = GNU_LINE.exec(line);
  if (gnu) return { hex: gnu[2]!.toLowerCase(), path: gnu[1] ? unescape(gnu[3]!) : gnu[3]!, line: number };
  const bsd = BSD_LINE.exec(line);
  if (bsd) return { hex: bsd[3]!.toLowerCase(), path: bsd[1] ? unescape(bsd[2]!) : bsd[2]!, line: number };
  return null;
}

/** Undoes sha256sum's escaping of a name holding `\`, CR or LF. */
function unescape(name: string): string {
  return name.replace(/\\(\\|n|r)/g, (_, c: string) => (c === "n" ? "\n" : c === "r" ? "\r" : "\\"));
}

/**
 * Checks one listed file: its hash and byte count, or what is wrong with it (reported as a
 * diagnostic). A file that does not exist is "absent", without a word, when `ignoreMissing`.
 */
async function checkEntry(entry: Entry, manifestName: string, ctx: CapabilityContext, ignoreMissing: boolean): Promise<"mismatched" | "missing" | "absent" | "unreadable" | "refused" | { bytes: number }> {
  let abs: string;
  try {
    abs = await resolveInside(ctx.root, entry.path, { label: `the path on ${manifestName} line ${entry.line},` });
  } catch (error) {
    ctx.progress.diagnostic({ severity: "error", code: "path_refused", file: manifestName, line: entry.line, message: (error as Error).message });
    return "refused";
  }
  try {
    // Checked on the open file: a link put in its place after resolveInside leads nowhere outside.
    const actual = await sha256File(abs, ctx.progress, { label: entry.path, inside: ctx.root });
    if (actual.hex === entry.hex) return { bytes: actual.bytes };
    ctx.progress.diagnostic({
      severity: "error",
      code: "mismatch",
      file: entry.path,
      message: `${entry.path} changed: SHA-256 is ${actual.hex}, ${manifestName} line ${entry.line} expects ${entry.hex}`,
    });
    return "mismatched";
  } catch (error) {
    if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      if (ignoreMissing) return "absent";
      ctx.progress.diagnostic({ severity: "error", code: "missing", file: entry.path, message: `${entry.path} is missing (listed on line ${entry.line} of ${manifestName})` });
      return "missing";
    }
    const why = code === "EISDIR" ? "it is a folder, not a file" : (error as Error).message;
    ctx.progress.diagnostic({ severity: "error", code: "unreadable", file: entry.path, message: `Cannot read ${entry.path}: ${why}` });
    return "unreadable";
  }
}

async function readManifest(path: string, given: string, root: string): Promise<string> {
  try {
    // Not readFile: a manifest path naming a FIFO or a device would wait or read for ever.
    const file = await openRegularFile(path, { label: `Manifest ${JSON.stringify(given)}`, inside: root });
    try {
      return await file.readText();
    } finally {
      await file.close();
    }
  } catch (error) {
    if (CapabilityError.is(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new CapabilityError("not_found", `Manifest ${JSON.stringify(given)} does not exist in the checkout; write one with files.digest or give its path relative to the checkout root`, {
        suggestion: "Write the manifest with files.digest (its output is one), or give the path of an existing one relative to the checkout root.",
        context: { manifest: given },
      });
    }
    throw new CapabilityError("invalid_input", `Manifest ${JSON.stringify(given)} cannot be read: ${code === "EISDIR" ? "it is a folder" : (error as Error).message}`, { context: { manifest: given } });
  }
}

function toPosix(path: string): string {
  return sep === "/" ? path : path.split(sep).join("/");
}

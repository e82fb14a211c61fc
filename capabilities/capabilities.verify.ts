import { capability, CapabilityError, inspectCapabilityFile, listCapabilityFiles, resolveInside, type CapabilityFileReport, type CapabilityProblem } from "docket";
import * as v from "valibot";
import { readdir, realpath } from "node:fs/promises";
import { join, relative, sep } from "node:path";

export default capability({
  id: "capabilities.verify",
  title: "Verify capability files",
  description:
    "Loads every capability file of the checkout's capabilities/ folder, of every folder this process loads besides it (--capabilities), and of path when given, each on its own, fresh from disk, and checks its id, file name, schema conversion and examples, and that no two files share an id. One diagnostic per problem with file and line; fails with verification_failed when there is any. The CI step for a folder of capabilities.",
  effect: "read",
  cancellable: true,
  errors: ["verification_failed"],
  input: v.object({
    path: v.optional(v.pipe(v.string(), v.minLength(1), v.description("Another folder of capability files, relative to the checkout root (as given to --capabilities)."))),
  }),
  output: v.object({
    files: v.pipe(v.number(), v.description("Capability files checked.")),
    capabilities: v.array(v.object({ file: v.string(), id: v.string() })),
    ok: v.literal(true),
  }),
  examples: [{}, { path: "tools/capabilities" }],
  async handler(input, ctx) {
    const host = await ctx.host();
    // The folders this process serves are the ones a CI step means: `docket run capabilities.verify
    // --capabilities checks` checks checks/, as `capabilities list --capabilities checks` lists it.
    // A folder given with --capabilities must exist: mistyped, it would pass the check by holding nothing.
    const folders: Folder[] = [{ folder: join(ctx.root, "capabilities"), named: null }, ...(host.capability_folders ?? []).map((folder) => ({ folder, named: "--capabilities" as const }))];
    if (input.path !== undefined) folders.push({ folder: await resolveInside(ctx.root, input.path, { label: "input.path" }), named: input.path });

    ctx.progress.step("list", "List capability files");
    const files = await listFolders(folders, ctx.root);
    ctx.progress.stepDone("list", true, `${files.length} files`);
    // Files that look like capabilities one folder down are never loaded (folders are not searched):
    // said, so that a file moved into a subfolder does not pass the check by vanishing from it.
    for (const { folder } of folders) {
      for (const nested of await nestedCapabilityFiles(folder)) {
        ctx.progress.diagnostic({ severity: "warning", code: "not_loaded", file: display(ctx.root, nested), message: `${display(ctx.root, nested)} is in a subfolder, and only files directly in ${display(ctx.root, folder)}/ are loaded; move it up, or name its folder with --capabilities (and as path here).` });
      }
    }

    // A file whose top level never settles is a problem of its own, not a verify that hangs.
    const timeoutMs = host.limits.load_timeout_ms;
    // Files the host's trial load kept out (a top level that loops, exits or leaves work running):
    // imported here they would hang this worker or end it, so their verdict is the trial's.
    const keptOut = new Map(host.load_errors.filter((error) => error.kept_out).map((error) => [error.file, error]));
    ctx.progress.step("check", "Load and check each file");
    const reports: CapabilityFileReport[] = [];
    const firstById = new Map<string, string>();
    // Files that do not load because another file declares their id first.
    const duplicates: string[] = [];
    let problems = 0;
    for (let i = 0; i < files.length; i++) {
      if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
      const file = files[i]!;
      const shown = display(ctx.root, file);
      const refused = keptOut.get(file);
      const report: CapabilityFileReport = refused
        ? { file, id: null, problems: [{ code: refused.kept_out as CapabilityProblem["code"], reason: refused.reason, line: refused.line, column: refused.column }], input_schema: null, output_schema: null }
        : await inspectCapabilityFile(file, { fresh: true, timeoutMs });
      reports.push(report);
      for (const problem of report.problems) {
        problems++;
        ctx.progress.diagnostic({
          severity: "error",
          code: problem.code,
          file: shown,
          message: problem.reason,
          ...(problem.line !== null ? { line: problem.line } : {}),
          ...(problem.column !== null ? { column: problem.column } : {}),
        });
      }
      if (report.id !== null) {
        const first = firstById.get(report.id);
        if (first === undefined) firstById.set(report.id, shown);
        else {
          problems++;
          duplicates.push(file);
          ctx.progress.diagnostic({ severity: "error", code: "duplicate_id", file: shown, message: `id "${report.id}" is already declared by ${first}; only the first one loads. Give one of them another id.` });
        }
      }
      ctx.progress.progress(i + 1, files.length, shown);
    }
    const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
    ctx.progress.stepDone("check", problems === 0, problems === 0 ? `${count(files.length, "file is", "files are")} sound` : count(problems, "problem", "problems"));

    if (problems > 0) {
      const bad = new Set([...reports.filter((r) => r.problems.length > 0).map((r) => r.file), ...duplicates]).size;
      throw new CapabilityError("verification_failed", `${count(problems, "problem", "problems")} in the capability files (${bad} of ${files.length} files ${bad === 1 ? "does" : "do"} not load as ${bad === 1 ? "it is" : "they are"}); see the diagnostics`, {
        context: { files: files.length, problems },
        suggestion: "Fix each diagnostic at its file and line, then run capabilities.verify again.",
      });
    }
    if (files.length === 0) ctx.progress.log(`No capability files found in ${folders.map((f) => display(ctx.root, f.folder)).join(" or ")}`, "warn");
    return {
      files: files.length,
      capabilities: reports.map((r) => ({ file: display(ctx.root, r.file), id: r.id! })),
      ok: true as const,
    };
  },
});

/** A folder to check; `named`: the input.path that named it, "--capabilities" for one given to the process, null for the checkout's own. */
type Folder = { folder: string; named: string | null };

/** The capability files of each folder, as discovery would load them; a folder met twice counts once. */
async function listFolders(folders: Folder[], root: string): Promise<string[]> {
  const files: string[] = [];
  const seen = new Set<string>();
  for (const { folder, named } of folders) {
    const listed = await listCapabilityFiles(folder);
    if (listed === null) {
      // The checkout's own capabilities/ may be absent; a folder the caller named must exist.
      if (named === null) continue;
      if (named === "--capabilities") {
        const shown = display(root, folder).startsWith("..") ? folder : display(root, folder);
        throw new CapabilityError("verification_failed", `--capabilities ${shown} is not a folder, so nothing of it was verified`, {
          context: { folder: shown },
          suggestion: "Give --capabilities the folder of your capability files (relative to where docket runs, or absolute), then run capabilities.verify again.",
        });
      }
      throw new CapabilityError("invalid_input", `input.path ${JSON.stringify(named)} is not a folder of the checkout; give the folder of your capability files, relative to the checkout root`, { context: { path: named } });
    }
    const real = await realpath(folder);
    if (seen.has(real)) continue;
    seen.add(real);
    files.push(...listed);
  }
  return files;
}

/** Capability-looking files (`a.b.ts`) one folder below `folder`, skipping hidden, `_private` and node_modules folders. */
async function nestedCapabilityFiles(folder: string): Promise<string[]> {
  const found: string[] = [];
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isDirectory() || entry.name.startsWith(".") || entry.name.startsWith("_") || entry.name === "node_modules") continue;
    const inner = await readdir(join(folder, entry.name), { withFileTypes: true }).catch(() => []);
    for (const file of inner) if (file.isFile() && /^[a-z][\w-]*(\.[a-z][\w-]*)+\.(ts|js)$/.test(file.name) && !/\.(d|test|spec)\.(ts|js)$/.test(file.name)) found.push(join(folder, entry.name, file.name));
  }
  return found.sort();
}

function display(root: string, file: string): string {
  const rel = relative(root, file);
  return sep === "/" ? rel : rel.split(sep).join("/");
}

// workflows.report: a table of the checkout's GitHub Actions workflows, parsed with the js-yaml
// package from the checkout's own node_modules (`npm install js-yaml`). See examples/README.md.
import { capability, resolveInside } from "docket";
import * as v from "valibot";
import { load, YAMLException } from "js-yaml";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

const row = v.object({
  file: v.string(),
  name: v.string(),
  triggers: v.array(v.string()),
  jobs: v.number(),
  runners: v.array(v.string()),
});

export default capability({
  id: "workflows.report",
  title: "GitHub workflows",
  description: "One row per workflow under .github/workflows: its name, what triggers it, how many jobs and which runners. A file that is not valid YAML is a diagnostic with its line.",
  effect: "read",
  input: v.object({
    folder: v.optional(v.pipe(v.string(), v.description("The workflows folder, relative to the checkout root.")), ".github/workflows"),
  }),
  output: v.object({ workflows: v.array(row), unreadable: v.number() }),
  examples: [{}, { folder: ".github/workflows" }],
  async handler(input, ctx) {
    const folder = await resolveInside(ctx.root, input.folder, { label: "input.folder" });
    const names = (await readdir(folder).catch(() => [] as string[])).filter((n) => /\.ya?ml$/.test(n)).sort();
    const workflows: Array<v.InferOutput<typeof row>> = [];
    let unreadable = 0;
    for (const [i, name] of names.entries()) {
      ctx.progress.progress(i + 1, names.length, name);
      const file = join(input.folder, name);
      try {
        workflows.push(summarize(file, load(await readFile(join(folder, name), "utf8"))));
      } catch (error) {
        unreadable++;
        const line = error instanceof YAMLException && error.mark ? error.mark.line + 1 : undefined;
        ctx.progress.diagnostic({ severity: "warning", code: "invalid_yaml", message: `${file} is not a workflow: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`, file, line });
      }
    }
    ctx.progress.log(`${workflows.length} workflow(s), ${unreadable} unreadable`);
    return { workflows, unreadable };
  },
});

/** One table row from a parsed workflow; `on` may be a string, a list or a map of events. */
function summarize(file: string, parsed: unknown) {
  if (typeof parsed !== "object" || parsed === null) throw new Error("the file does not hold a mapping");
  const doc = parsed as { name?: unknown; on?: unknown; true?: unknown; jobs?: Record<string, { "runs-on"?: unknown }> };
  // YAML 1.1 reads a bare `on:` key as the boolean true.
  const on = doc.on ?? doc.true;
  const triggers = typeof on === "string" ? [on] : Array.isArray(on) ? on.map(String) : on && typeof on === "object" ? Object.keys(on) : [];
  const jobs = Object.values(doc.jobs ?? {});
  const runners = [...new Set(jobs.flatMap((job) => (Array.isArray(job?.["runs-on"]) ? job["runs-on"].map(String) : job?.["runs-on"] ? [String(job["runs-on"])] : [])))].sort();
  return { file, name: typeof doc.name === "string" ? doc.name : file, triggers, jobs: jobs.length, runners };
}

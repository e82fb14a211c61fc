// links.check: a long, cancellable execution. Finds the http(s) links in the checkout's Markdown
// files and checks each one, a step per phase, progress per link, a diagnostic (file and line)
// per broken link and the whole result as an artifact. See examples/README.md.
import { capability, CapabilityError, resolveInside, type CapabilityContext } from "docket";
import * as v from "valibot";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";

const LINK = /\bhttps?:\/\/[^\s<>()"'`\]]+/g;
const SKIPPED = new Set([".git", ".docket", "node_modules"]);

export default capability({
  id: "links.check",
  title: "Check links",
  description: "Checks every http(s) link in the Markdown files under a folder: one request per distinct URL, a diagnostic per broken one. Fails with broken_links when any is broken.",
  effect: "read",
  // Only useful as an execution: it takes a while, reports as it goes, and writes links.tsv.
  execution: "always",
  cancellable: true,
  errors: ["broken_links"],
  input: v.object({
    path: v.optional(v.pipe(v.string(), v.description("Folder to search, relative to the checkout root.")), "."),
    timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(120_000), v.description("How long one link may take.")), 10_000),
  }),
  output: v.object({ files: v.number(), links: v.number(), broken: v.number() }),
  examples: [{ path: "docs" }],
  async handler(input, ctx) {
    const base = await resolveInside(ctx.root, input.path, { label: "input.path" });

    ctx.progress.step("find", "Find Markdown files");
    const files = await markdownFiles(base, ctx);
    ctx.progress.stepDone("find", true, `${files.length} file(s)`);

    ctx.progress.step("extract", "Extract links");
    const places = new Map<string, Array<{ file: string; line: number }>>();
    for (const file of files) {
      const lines = (await readFile(file, "utf8")).split("\n");
      lines.forEach((text, i) => {
        for (const [url] of text.matchAll(LINK)) {
          const at = { file: relative(ctx.root, file), line: i + 1 };
          places.set(url, [...(places.get(url) ?? []), at]);
        }
      });
    }
    ctx.progress.stepDone("extract", true, `${places.size} distinct link(s)`);

    ctx.progress.step("check", "Check each link");
    const results: string[] = ["status\turl\twhere"];
    let broken = 0;
    let done = 0;
    for (const [url, where] of places) {
      if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
      const status = await check(url, input.timeout_ms, ctx);
      done++;
      ctx.progress.progress(done, places.size, url);
      results.push(`${status}\t${url}\t${where.map((w) => `${w.file}:${w.line}`).join(" ")}`);
      if (status === "ok") continue;
      broken++;
      for (const at of where) ctx.progress.diagnostic({ severity: "error", code: "broken_link", message: `${url}: ${status}`, file: at.file, line: at.line });
    }
    ctx.progress.stepDone("check", broken === 0, `${broken} broken`);
    if (ctx.execution) await ctx.artifacts.write("links.tsv", `${results.join("\n")}\n`);
    if (broken > 0) {
      throw new CapabilityError("broken_links", `${broken} of ${places.size} link(s) are broken.`, {
        context: { files: files.length, links: places.size, broken },
        suggestion: "Fix or remove the links the diagnostics name; links.tsv lists every result.",
      });
    }
    return { files: files.length, links: places.size, broken };
  },
});

/** "ok", or why the link is broken. HEAD first; a server refusing HEAD gets a GET. */
async function check(url: string, timeoutMs: number, ctx: CapabilityContext): Promise<string> {
  // Cancelling the execution aborts the request at once; the per-link timeout only this one.
  const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]);
  try {
    let response = await fetch(url, { method: "HEAD", redirect: "follow", signal });
    if (response.status === 405 || response.status === 501) response = await fetch(url, { method: "GET", redirect: "follow", signal });
    await response.body?.cancel();
    return response.ok ? "ok" : `HTTP ${response.status}`;
  } catch (error) {
    if (ctx.signal.aborted) throw ctx.progress.cancellation();
    return (error as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : `unreachable (${(error as Error).message})`;
  }
}

async function markdownFiles(dir: string, ctx: CapabilityContext): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
    const path = join(dir, entry.name);
    if (entry.isDirectory() && !SKIPPED.has(entry.name)) found.push(...(await markdownFiles(path, ctx)));
    else if (entry.isFile() && entry.name.endsWith(".md")) found.push(path);
  }
  return found.sort();
}

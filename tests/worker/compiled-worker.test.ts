import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { BunPlugin } from "bun";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileDocket, WORKER_ENTRY } from "../../scripts/build.ts";

// Proves the compile + worker + plugin path before the CLI exists: a throwaway main entry that
// uses the real pool and plugin, compiled with the build script's own settings, runs a user's
// capability file that lives outside the repository with no node_modules anywhere above it.

const poolModule = new URL("../../runtime/worker/pool.ts", import.meta.url).pathname;
const pluginModule = new URL("../../runtime/adapter/bun-modules.ts", import.meta.url).pathname;

const ENTRY = `
import { createWorkerPool } from ${JSON.stringify(poolModule)};
import { registerDocketModules } from ${JSON.stringify(pluginModule)};

registerDocketModules();
const pool = createWorkerPool({ executionWorkers: 1, hostFacts: () => ({ root: "from-main" }) });
const results = [];
for (const file of process.argv.slice(2)) {
  const def = (await import(file)).default; // the main thread loads it too, as the registry will
  const events = [];
  const outcome = await pool.run(
    { capability: def.id, source: { kind: "file", file }, input: { n: 3 }, execution: null, root: process.cwd(), artifacts_dir: null, artifact_limits: { files: 1, bytes: 1, total_bytes: 1 } },
    { lane: "execution", onEvents: (drafts) => events.push(...drafts) },
  ).outcome;
  results.push({ main_id: def.id, outcome, events });
}
console.log(JSON.stringify({ meta_url: import.meta.url, results }));
await pool.close();
`;

const USER_CAPABILITY = `
import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "user.count",
  title: "Count",
  description: "Counts to n.",
  effect: "read",
  input: v.object({ n: v.number() }),
  output: v.object({ counted: v.number(), host: v.unknown() }),
  async handler(input, ctx) {
    for (let i = 1; i <= input.n; i++) ctx.progress.progress(i, input.n);
    if ("fake" in v) throw new Error("loaded the fake valibot of node_modules, not docket's");
    return v.parse(v.object({ counted: v.number(), host: v.unknown() }), { counted: input.n, host: await ctx.host() });
  },
});
`;

/** The built-ins map is someone else's file and beside the point here: bundle an empty one. */
const emptyBuiltins: BunPlugin = {
  name: "empty-builtins",
  setup(build) {
    build.onResolve({ filter: /capability\/builtins\.ts$/ }, () => ({ path: "builtins", namespace: "empty-builtins" }));
    build.onLoad({ filter: /.*/, namespace: "empty-builtins" }, () => ({ contents: "export const BUILTINS = {};", loader: "ts" }));
  },
};

let work = "";
let binary = "";
let userFile = "";
let shadowedFile = "";

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "docket-compiled-"));
  await writeFile(join(work, "main.ts"), ENTRY);
  await mkdir(join(work, "user"));
  userFile = join(work, "user", "user.count.ts");
  await writeFile(userFile, USER_CAPABILITY);
  // Another user folder under a node_modules with a fake valibot: the served module must win.
  await mkdir(join(work, "shadow", "node_modules", "valibot"), { recursive: true });
  await writeFile(join(work, "shadow", "node_modules", "valibot", "package.json"), JSON.stringify({ name: "valibot", version: "0.0.0", type: "module", main: "index.js" }));
  await writeFile(join(work, "shadow", "node_modules", "valibot", "index.js"), "export const fake = true;");
  await mkdir(join(work, "shadow", "capabilities"));
  shadowedFile = join(work, "shadow", "capabilities", "user.count.ts");
  await writeFile(shadowedFile, USER_CAPABILITY);
  binary = join(work, "bin", "docket-test");
  await compileDocket({ entrypoints: [join(work, "main.ts"), WORKER_ENTRY], outfile: binary, plugins: [emptyBuiltins] });
}, 120_000);
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("compiled binary", () => {
  test("a compiled binary runs user files outside the repo on its bundled worker, docket and valibot served (even under a node_modules/valibot)", async () => {
    // cwd in the user's folder, far from the repository's node_modules.
    const child = Bun.spawn([binary, userFile, shadowedFile], { cwd: join(work, "user"), stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "" } });
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const { meta_url, results } = JSON.parse(stdout);
    // The worker was found inside the binary, not on disk: import.meta.url is the embedded path.
    expect(meta_url).toStartWith("file:///$bunfs/");
    expect(results).toHaveLength(2);
    for (const result of results) {
      expect(result.main_id).toBe("user.count");
      expect(result.outcome).toEqual({ ok: true, output: { counted: 3, host: { root: "from-main" } } });
      expect(result.events.map((e: { data: { current: number } }) => e.data.current)).toEqual([1, 2, 3]);
    }
  });
});

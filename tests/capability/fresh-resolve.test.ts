// runtime/capability/_fresh-resolve.ts against the runtime's own resolver, each case in a fresh
// process: what the resolver keeps of folders it met before a node_modules existed is the point.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const FRESH = join(import.meta.dir, "..", "..", "runtime", "capability", "_fresh-resolve.ts");
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** Runs `body` in a new Bun process with `root` (a fresh folder), `r` (Bun.resolveSync or null) and `fresh` (resolveFresh) in scope; answers what it printed. */
function inFreshProcess(body: string): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "docket-fresh-")));
  made.push(root);
  const script = `
    const { mkdirSync, writeFileSync, symlinkSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { resolveFresh } = await import(${JSON.stringify(FRESH)});
    const root = ${JSON.stringify(root)};
    const r = (s, d) => { try { return Bun.resolveSync(s, d); } catch { return null; } };
    const fresh = (s, d) => resolveFresh(s, d, r);
    const write = (path, text) => { mkdirSync(join(root, path, ".."), { recursive: true }); writeFileSync(join(root, path), text); };
    ${body}
  `;
  const child = Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
  if (child.exitCode !== 0) throw new Error(child.stderr.toString());
  return child.stdout.toString().trim();
}

test("a workspace package linked into a node_modules made after start finds its own new dependency from its folders the runtime met before (authoring checking tester, session 49)", () => {
  const said = inFreshProcess(`
    write("package.json", '{"name":"root","private":true}');
    write("packages/lib/package.json", '{"name":"@team/lib","type":"module","main":"src/index.ts","dependencies":{"@acme/y":"1"}}');
    write("packages/lib/src/index.ts", 'import { y } from "@acme/y"; export const hi = y;');
    write("capabilities/x.ts", "");
    // Met before any node_modules: a capability imported a file of the package by its path.
    r("./index.ts", join(root, "packages/lib/src"));
    r("@acme/y", join(root, "packages/lib/src"));
    write("node_modules/@acme/y/package.json", '{"name":"@acme/y","version":"1.0.0","type":"module","main":"index.js"}');
    write("node_modules/@acme/y/index.js", "export const y = 5;");
    mkdirSync(join(root, "node_modules/@team"), { recursive: true });
    symlinkSync("../../packages/lib", join(root, "node_modules/@team/lib"));
    console.log(JSON.stringify({ lib: fresh("@team/lib", join(root, "capabilities")), y: r("@acme/y", join(root, "packages/lib/src")) }));
  `);
  const { lib, y } = JSON.parse(said) as { lib: string | null; y: string | null };
  expect(lib).toEndWith("/packages/lib/src/index.ts");
  expect(y).toEndWith("/node_modules/@acme/y/index.js");
});

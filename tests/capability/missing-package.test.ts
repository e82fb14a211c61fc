// What a load error says of an import that did not resolve (capability/_missing-package.ts):
// a package to install, or an alias whose file does not exist — never "npm install" of an alias.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { processStartedMs } from "../../runtime/capability/_process-started.ts";
import { explainUnresolvedPackage } from "../../runtime/capability/_missing-package.ts";
import { loadErrorSuggestion } from "../../runtime/capability/unknown-capability.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "docket-missing-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, "capabilities"));
writeFileSync(join(root, "package.json"), JSON.stringify({ name: "aliases", type: "module", imports: { "#lib/*": { bun: "./lib/*", default: "./lib/*" }, "#dep": "left-pad-zz", "#deps/*": { types: "./types/*", default: "left-pad-zz/*" }, "#again": "#dep" } }));
writeFileSync(join(root, "capabilities", "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { "@lib/*": ["../lib/*"] } } }));
const importer = join(root, "capabilities", "team.cap.ts");
const RUNTIME = "Cannot find package";

describe("explainUnresolvedPackage", () => {
  test("an alias whose file does not exist names the config and the file it leads to, and installs nothing", () => {
    expect(explainUnresolvedPackage("@lib/q.ts", importer, RUNTIME)).toBe(
      `cannot resolve import "@lib/q.ts": tsconfig.json maps it to ${JSON.stringify(join(root, "lib", "q.ts"))}, and no such file exists. Create it, or correct the import or the alias.`,
    );
    expect(explainUnresolvedPackage("#lib/mid.ts", importer, RUNTIME)).toContain(`package.json maps it to ${JSON.stringify(join(root, "lib", "mid.ts"))}`);
    expect(explainUnresolvedPackage("#nothing/x", importer, RUNTIME)).toContain('no "imports" entry of the nearest package.json matches it');
    for (const specifier of ["@lib/q.ts", "#lib/mid.ts", "#nothing/x"]) expect(explainUnresolvedPackage(specifier, importer, RUNTIME)).not.toContain("npm install");
  });

  test("an \"imports\" entry naming a package that is not installed says so and how to install it (checking tester, session 46: it said no entry matched)", () => {
    const reason = explainUnresolvedPackage("#dep", importer, "Cannot find package '#dep' from 'team.cap.ts'")!;
    expect(reason).toStartWith('cannot resolve import "#dep": the "imports" of the nearest package.json map it to the package "left-pad-zz", and the package "left-pad-zz" is not installed.');
    expect(reason).toContain("npm install left-pad-zz");
    expect(reason).not.toContain("no \"imports\" entry");
    // The other packages the file imports are named with it, never the entry itself as a package.
    const text = 'import pad from "#dep";\nimport other from "other-zz";\n';
    expect(explainUnresolvedPackage("#dep", importer, "Cannot find package '#dep'", text)).toContain('nor "other-zz", which this file imports too. Install them with `npm install left-pad-zz other-zz`');
    // An entry naming another entry leads nowhere, and is said so (checking tester, session 47).
    expect(explainUnresolvedPackage("#again", importer, "Cannot find package '#again'")).toStartWith('cannot resolve import "#again": the "imports" of the nearest package.json map it to "#dep", another "imports" name, which the runtime does not follow');
    // Through a pattern and its conditions, as the runtime takes them.
    expect(explainUnresolvedPackage("#deps/sub", importer, RUNTIME)).toContain('map it to the package "left-pad-zz/sub", and the package "left-pad-zz" is not installed');
  });

  test("an alias whose file exists (the mapping is newer than the process) says to restart, not to create the file", () => {
    mkdirSync(join(root, "lib"), { recursive: true });
    writeFileSync(join(root, "lib", "there.ts"), "export const there = 1;\n");
    const reason = explainUnresolvedPackage("@lib/there", importer, RUNTIME)!;
    expect(reason).toContain(`tsconfig.json maps it to ${JSON.stringify(join(root, "lib", "there.ts"))}, which exists`);
    expect(reason).toContain("Restart `docket serve`");
    expect(reason).not.toContain("no such file exists");
    // The suggestion beside it says the same, not that saving the file reloads it.
    const file = join(root, "capabilities", "team.cap.ts");
    expect(loadErrorSuggestion({ file, line: 1, column: 1, reason })).toBe("Restart `docket serve` (or `docket mcp`): this process keeps what it resolved when it first loaded team.cap.ts, and saving the file again does not change that.");
    expect(loadErrorSuggestion({ file, line: 1, column: 1, reason: explainUnresolvedPackage("@lib/q.ts", importer, RUNTIME)! })).toContain("loads it again once it is saved");
  });

  test("an alias of a config older than this process that the runtime still does not resolve (an extends list) says where to add it, not to restart (tester, session 33)", () => {
    const repo = join(root, "listed");
    mkdirSync(join(repo, "config"), { recursive: true });
    mkdirSync(join(repo, "libs"), { recursive: true });
    mkdirSync(join(repo, ".git"));
    writeFileSync(join(repo, "libs", "util.ts"), "export const u = 1;\n");
    writeFileSync(join(repo, "config", "paths.json"), JSON.stringify({ compilerOptions: { baseUrl: "..", paths: { "@acme/util": ["libs/util.ts"] } } }));
    const tsconfig = join(repo, "tsconfig.json");
    writeFileSync(tsconfig, JSON.stringify({ extends: ["./config/paths.json"] }));
    // Written long before this process started.
    const past = new Date(Date.now() - 3_600_000);
    for (const file of [tsconfig, join(repo, "config", "paths.json")]) utimesSync(file, past, past);
    const reason = explainUnresolvedPackage("@acme/util", join(repo, "t.nx.ts"), RUNTIME)!;
    expect(reason).toContain("but the runtime does not resolve it from there");
    expect(reason).toContain("Add the alias to the compilerOptions.paths of tsconfig.json itself.");
    expect(reason).not.toContain("Restart");
  });

  test("an alias of a tsconfig.json above the file's own one says which entry to add to its own, never to install it", () => {
    const repo = join(root, "rooted");
    mkdirSync(join(repo, "capabilities"), { recursive: true });
    mkdirSync(join(repo, ".git"));
    writeFileSync(join(repo, "tsconfig.json"), JSON.stringify({ compilerOptions: { baseUrl: ".", paths: { "@/*": ["src/*", "gen/*"] } } }));
    writeFileSync(join(repo, "capabilities", "tsconfig.json"), JSON.stringify({ extends: "../tsconfig.json", compilerOptions: { paths: { docket: ["../.docket/types/docket/public.d.ts"] } } }));
    expect(explainUnresolvedPackage("@/fmt/index.ts", join(repo, "capabilities", "team.fmt.ts"), RUNTIME)).toBe(
      'cannot resolve import "@/fmt/index.ts": tsconfig.json maps "@/*", but the tsconfig.json of this file is capabilities/tsconfig.json, and TypeScript and the runtime read only the nearest one\'s "paths" (an "extends" does not add them either). Add "@/*": ["../src/*", "../gen/*"] to the compilerOptions.paths of capabilities/tsconfig.json.',
    );
    // No alias anywhere: "@/x" names no package either.
    const reason = explainUnresolvedPackage("@/nowhere", importer, RUNTIME)!;
    expect(reason).toContain('cannot resolve import "@/nowhere": it names no package, and no tsconfig.json "paths" alias matches it.');
    expect(reason).not.toContain("install");
  });

  test("an alias the root tsconfig.json inherits through extends (an Nx tsconfig.base.json) says which entry to add, never to install a package of that name (tester, session 33)", () => {
    const repo = join(root, "nx");
    mkdirSync(join(repo, "capabilities"), { recursive: true });
    mkdirSync(join(repo, "libs", "shared"), { recursive: true });
    mkdirSync(join(repo, ".git"));
    writeFileSync(join(repo, "tsconfig.base.json"), JSON.stringify({ compilerOptions: { baseUrl: ".", paths: { "@acme/shared": ["libs/shared/index.ts"] } } }));
    writeFileSync(join(repo, "tsconfig.json"), JSON.stringify({ extends: "./tsconfig.base.json", include: ["libs"] }));
    writeFileSync(join(repo, "capabilities", "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { docket: ["../.docket/types/docket/public.d.ts"] } } }));
    const reason = explainUnresolvedPackage("@acme/shared", join(repo, "capabilities", "nx.shared.ts"), RUNTIME)!;
    expect(reason).toContain('Add "@acme/shared": ["../libs/shared/index.ts"] to the compilerOptions.paths of capabilities/tsconfig.json.');
    expect(reason).not.toContain("npm install");
  });

  test("a package that is not installed is still told how to install it", () => {
    expect(explainUnresolvedPackage("left-pad-nowhere", importer, RUNTIME)).toContain("Install it with `npm install left-pad-nowhere`");
  });

  test("the install is advised in the folder of the nearest package.json above the file, in a checkout without .git too", () => {
    // No .git here: the checkout root is no bound, and capabilities/ (no package.json) is not where to install.
    expect(explainUnresolvedPackage("left-pad-nowhere", importer, RUNTIME)).toEndWith(`\`npm install left-pad-nowhere\` in ${root}.`);
    const git = join(root, "repo");
    mkdirSync(join(git, ".git"), { recursive: true });
    mkdirSync(join(git, "capabilities"));
    // Inside a git checkout with no package.json: its root, not a manifest of a folder above it.
    expect(explainUnresolvedPackage("left-pad-nowhere", join(git, "capabilities", "x.ts"), RUNTIME)).toEndWith(`in ${git}.`);
  });

  test("an installed package asked for a subpath it does not provide says so, not that it was installed after docket started", () => {
    const modules = join(root, "node_modules");
    mkdirSync(join(modules, "yamlish", "dist"), { recursive: true });
    writeFileSync(join(modules, "yamlish", "package.json"), JSON.stringify({ name: "yamlish", exports: { ".": "./index.js", "./util": "./util.js", "./dist/*": "./dist/*.js" } }));
    for (const file of ["index.js", "util.js", "dist/a.js"]) writeFileSync(join(modules, "yamlish", file), "export const x = 1;\n");
    mkdirSync(join(modules, "plain"), { recursive: true });
    writeFileSync(join(modules, "plain", "package.json"), JSON.stringify({ name: "plain" }));
    writeFileSync(join(modules, "plain", "there.js"), "export const x = 1;\n");
    const runtime = (pkg: string) => `Cannot find package '${pkg}' imported from ${importer}`;

    const missing = explainUnresolvedPackage("yamlish/nonexistent", importer, runtime("yamlish"))!;
    expect(missing).toContain(`the package "yamlish" is installed (${join(modules, "yamlish")}) but does not provide "./nonexistent"`);
    expect(missing).not.toContain("installed after docket started");
    expect(explainUnresolvedPackage("plain/nope", importer, runtime("plain"))).toContain('does not provide "./nope"');
    // What the package does provide, the runtime could not find: installed after it looked.
    for (const [specifier, pkg] of [["yamlish/util", "yamlish"], ["yamlish/dist/a", "yamlish"], ["yamlish", "yamlish"], ["plain/there", "plain"]]) {
      expect(explainUnresolvedPackage(specifier!, importer, runtime(pkg!))).toContain("installed after docket started");
    }
     // A require()'s words for it say the same (authoring tester, session 46: chalk's require of ansi-styles was "does not provide it").
    const required = explainUnresolvedPackage("yamlish/util", importer, `Cannot find module 'yamlish' from '${importer}'`);
    expect(required).toContain("installed after docket started");
    expect(required).toContain("Restart `docket serve`");
  });

  test("a worker tells a package installed after the process started by the process's start, not its own thread's (authoring tester, session 46)", async () => {
    const pkg = join(root, "node_modules", "pk-mid");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "pk-mid", exports: { "./util": "./util.js" } }));
    writeFileSync(join(pkg, "util.js"), "export const x = 1;\n");
    // Written after the process started and before this thread did: a thread's own uptime called it older than the process.
    const between = new Date(processStartedMs() + 10);
    for (const path of [join(pkg, "util.js"), join(pkg, "package.json"), pkg]) utimesSync(path, between, between);
    const worker = new Worker(
      `const { parentPort, workerData } = require("node:worker_threads");
       const { setProcessStartedMs } = require(${JSON.stringify(join(import.meta.dir, "../../runtime/capability/_process-started.ts"))});
       const { explainUnresolvedPackage } = require(${JSON.stringify(join(import.meta.dir, "../../runtime/capability/_missing-package.ts"))});
       setProcessStartedMs(workerData.started);
       parentPort.postMessage(explainUnresolvedPackage("pk-mid/util", workerData.importer, "Cannot find package 'pk-mid' imported from " + workerData.importer));`,
      { eval: true, workerData: { started: processStartedMs(), importer } },
    );
    const said = await new Promise<string>((resolve, reject) => (worker.once("message", resolve), worker.once("error", reject)));
    await worker.terminate();
    expect(said).toContain("installed after docket started");
  });

  test("an installed package that does not give what was asked says what is wrong: an unbuilt file, an excluded path, a require()-only entry, a folder with no index", () => {
    const modules = join(root, "node_modules");
    mkdirSync(join(modules, "pk-exp", "lib"), { recursive: true });
    writeFileSync(
      join(modules, "pk-exp", "package.json"),
      JSON.stringify({ name: "pk-exp", exports: { ".": "./index.js", "./util": "./dist/util.js", "./internal/*": null, "./req": { types: "./req.d.ts", require: "./req.cjs" }, "./*": "./lib/*.js" } }),
    );
    for (const file of ["index.js", "req.cjs", "lib/a.js"]) writeFileSync(join(modules, "pk-exp", file), "export const x = 1;\n");
    mkdirSync(join(modules, "pk-folder", "folder"), { recursive: true });
    writeFileSync(join(modules, "pk-folder", "package.json"), JSON.stringify({ name: "pk-folder" }));
    writeFileSync(join(modules, "pk-folder", "folder", "README.md"), "docs\n");
    mkdirSync(join(modules, "pk-unbuilt"), { recursive: true });
    writeFileSync(join(modules, "pk-unbuilt", "package.json"), JSON.stringify({ name: "pk-unbuilt", main: "./dist/index.js" }));
    const runtime = (pkg: string) => `Cannot find package '${pkg}' imported from ${importer}`;
    const reason = (specifier: string) => explainUnresolvedPackage(specifier, importer, runtime(specifier.split("/")[0]!))!;

    expect(reason("pk-exp/util")).toBe(
      `cannot resolve import "pk-exp/util": the package "pk-exp" is installed (${join(modules, "pk-exp")}) but does not provide "./util": its package.json "exports" maps it to "./dist/util.js", which does not exist (is the package built?). Build the package (one installed from a git checkout or a workspace is often not built), or reinstall it.`,
    );
    expect(reason("pk-exp/lib-less")).toContain('maps it to "./lib/lib-less.js", which does not exist');
    expect(reason("pk-exp/internal/secret")).toContain('does not provide "./internal/secret": its package.json "exports" maps "./internal/*" to null, which keeps it private to the package.');
    expect(reason("pk-exp/req")).toContain('does not provide "./req": its package.json "exports" gives it only for require() (under "types", "require"), and an import matches none of them.');
    expect(reason("pk-folder/folder")).toContain('does not provide "./folder": "./folder" is a folder with no index file (index.js) in it. Import a file inside it.');
    expect(reason("pk-unbuilt")).toContain('does not provide its main module: its package.json "main" is "./dist/index.js", which does not exist (is the package built?).');
    for (const specifier of ["pk-exp/util", "pk-exp/lib-less", "pk-exp/internal/secret", "pk-exp/req", "pk-folder/folder", "pk-unbuilt"]) {
      expect(reason(specifier)).not.toContain("installed after docket started");
    }
  });

  test("an installed package that gives the file says it was installed after docket started only when its folder or the file is newer than the process", () => {
    const pkg = join(root, "node_modules", "pk-old");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "pk-old", exports: { "./util": "./util.js" } }));
    writeFileSync(join(pkg, "util.js"), "export const x = 1;\n");
    const before = new Date(Date.now() - process.uptime() * 1000 - 60_000);
    for (const path of [join(pkg, "util.js"), join(pkg, "package.json"), pkg]) utimesSync(path, before, before);
    const runtime = `Cannot find package 'pk-old' imported from ${importer}`;
    const reason = explainUnresolvedPackage("pk-old/util", importer, runtime)!;
    expect(reason).not.toContain("installed after docket started");
    expect(reason).toContain(`the package "pk-old" is installed (${pkg}) but does not provide it: ${runtime}.`);
    // Rebuilt (the file written anew) while the process ran: what the runtime keeps is older.
    const now = new Date();
    utimesSync(join(pkg, "util.js"), now, now);
    expect(explainUnresolvedPackage("pk-old/util", importer, runtime)).toContain("installed after docket started");
  });
});

// The npm packages of a release, installed from their tarballs into a new project with no registry
// to fall back on: `npx docket` runs the platform's binary, and `import … from "docket"` type-checks.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { REPO, cleanEnv, removeTempDirs, tempDir, writeFiles } from "../cli/_harness.ts";
import { testRelease, type BuiltRelease } from "./_release.ts";

const SLOW = 120_000;
const TSC = join(REPO, "node_modules", ".bin", "tsc");
let release: BuiltRelease;
let project: string;
let packed: Array<{ name: string; files: Array<{ path: string }> }>;

/** Runs a command in the project, with npm kept off every registry. */
function sh(argv: string[], cwd = project) {
  const result = Bun.spawnSync(argv, {
    cwd,
    env: cleanEnv({ npm_config_registry: "http://127.0.0.1:9/", npm_config_cache: join(project, "..", "npm-cache"), npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" }),
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

const CAPABILITY = `import { capability, CapabilityError } from "docket";
import * as v from "valibot";

export default capability({
  id: "hello.greet",
  title: "Hello greet",
  description: "Greets someone by name.",
  effect: "read",
  errors: ["empty_name"],
  input: v.object({ name: v.optional(v.string(), "world") }),
  output: v.object({ greeting: v.string() }),
  async handler(input, ctx) {
    if (input.name === "") throw new CapabilityError("empty_name", "input.name is empty.");
    ctx.progress.step("greet", "Greeting");
    ctx.progress.stepDone("greet", true);
    return { greeting: \`Hello, \${input.name}!\` };
  },
});
`;

/** Runs until asked to stop, and stops when asked. */
const SPIN = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "demo.spin", title: "Spin", description: "Spins until cancelled.", effect: "read", cancellable: true,
  input: v.object({}), output: v.object({}),
  async handler(_input, ctx) {
    ctx.progress.step("spin", "Spinning");
    while (!ctx.progress.cancelled()) await new Promise((r) => setTimeout(r, 10));
    throw ctx.progress.cancellation();
  },
});
`;

beforeAll(async () => {
  release = await testRelease();
  const root = tempDir("npm");
  project = join(root, "project");
  const tarballs = join(root, "tarballs");
  mkdirSync(tarballs);
  mkdirSync(project);
  // npm pack gzips a ~110 MiB binary for tens of seconds here; tar with gzip -1 makes the same
  // package layout in a second. `npm run test:release` packs it with npm itself.
  const platform = join(release.npmDir, "linux-x64");
  const platformTarball = join(tarballs, "docket-linux-x64.tgz");
  const packPlatform =
    process.env.DOCKET_TEST_RELEASE === "all"
      ? sh(["npm", "pack", platform, "--pack-destination", tarballs], root)
      : sh(["sh", "-c", `tar -C "$0" --transform 's,^\\.,package,' -cf - . | gzip -1 > "$1"`, platform, platformTarball], root);
  if (packPlatform.code !== 0) throw new Error(`packing @docket/linux-x64 failed: ${packPlatform.stderr}`);
  // docket's dependencies come from this repository's node_modules, packed: no registry is asked.
  const dependencies = ["valibot", "@types/node", "undici-types"].map((name) => join(REPO, "node_modules", name));
  const pack = sh(["npm", "pack", join(release.npmDir, "docket"), ...dependencies, "--pack-destination", tarballs, "--json"], root);
  if (pack.code !== 0) throw new Error(`npm pack failed: ${pack.stderr}`);
  packed = JSON.parse(pack.stdout);
  if (packed.length !== 4) throw new Error(`npm pack made ${packed.length} tarballs, not 4: ${pack.stdout}`);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "a-team-repo", version: "1.0.0", private: true }));
  const tgz = Bun.spawnSync(["sh", "-c", `ls "${tarballs}"/*.tgz`]).stdout.toString().trim().split("\n");
  const installed = sh(["npm", "install", "--offline", "--save-dev", ...tgz]);
  if (installed.code !== 0) throw new Error(`npm install failed:\n${installed.stdout}${installed.stderr}`);
  Bun.spawnSync(["git", "init", "-q", project]);
  writeFiles(project, { "capabilities/hello.greet.ts": CAPABILITY, "capabilities/demo.spin.ts": SPIN });
}, 300_000);

afterAll(() => {
  removeTempDirs();
});

describe("the docket npm package", () => {
  test("npm pack of docket holds the launcher, the module's types, the LICENSE and no binary", () => {
    const files = packed.find((p) => p.name === "docket")!.files.map((f) => f.path);
    expect(files).toContain("bin/docket.js");
    expect(files).toContain("types/public.d.ts");
    expect(files).toContain("types/capability/declaration.d.ts");
    expect(files).toContain("index.js");
    expect(files).toContain("package.json");
    expect(files).toContain("LICENSE");
    expect(files.every((f) => !f.endsWith(".ts") || f.endsWith(".d.ts"))).toBe(true);
    expect(files.filter((f) => f.startsWith("bin/"))).toEqual(["bin/docket.js"]);
  });

  test("npx docket --version runs the binary of @docket/linux-x64", () => {
    const result = sh(["npx", "--offline", "docket", "--version"]);
    expect(result.stderr).toBe("");
    expect(result).toMatchObject({ code: 0, stdout: `docket ${pkg.version} (commit ${release.manifest.commit}, linux-x64)\n` });
  }, SLOW);

  test("npx docket run runs the team's capability file; the binary serves the docket module", () => {
    const ran = sh(["npx", "--offline", "docket", "run", "hello.greet", "--input", '{"name":"Ada"}', "--format", "json"]);
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout).output).toEqual({ greeting: "Hello, Ada!" });
    // Exit codes pass through the launcher: invalid input is 2.
    expect(sh(["npx", "--offline", "docket", "run", "hello.greet", "--input", '{"name":3}']).code).toBe(2);
  }, SLOW);

  test("the package's types check a capability file with tsc, and catch a wrong one", () => {
    const tsconfig = (module: string, moduleResolution: string, skipLibCheck: boolean) =>
      writeFileSync(
        join(project, "tsconfig.json"),
        JSON.stringify({ compilerOptions: { strict: true, module, moduleResolution, target: "es2022", noEmit: true, skipLibCheck, types: [] }, include: ["capabilities"] }),
      );
    // skipLibCheck off: the package's own declarations must check too, with no Node types asked for.
    tsconfig("nodenext", "nodenext", false);
    // The project's own `*.svg` module beside: the package's text-import patterns are not forced
    // on its program, where they clashed (distribution tester, session 47: TS2300).
    writeFiles(project, { "capabilities/assets.d.ts": 'declare module "*.svg" {\n  const src: string;\n  export default src;\n}\n' });
    const ok = sh([TSC, "-p", "."]);
    expect(`${ok.stdout}${ok.stderr}`).toBe("");
    expect(ok.code).toBe(0);
    rmSync(join(project, "capabilities", "assets.d.ts"));
    // Asked for, they type a text import.
    writeFiles(project, { "capabilities/prompt.txt": "Say hello.\n", "capabilities/_prompt.ts": '/// <reference types="docket/text-imports" />\nimport prompt from "./prompt.txt";\nexport const words: string = prompt;\n' });
    try {
      const texts = sh([TSC, "-p", "."]);
      expect(`${texts.stdout}${texts.stderr}`).toBe("");
      expect(texts.code).toBe(0);
    } finally {
      for (const file of ["prompt.txt", "_prompt.ts"]) rmSync(join(project, "capabilities", file));
    }
    // A bundler project; a capability returning the wrong output is an error, in its file only.
    tsconfig("esnext", "bundler", true);
    writeFiles(project, { "capabilities/broken.check.ts": CAPABILITY.replace('id: "hello.greet"', 'id: "broken.check"').replace("return { greeting:", "return { greeting: 42, nope:") });
    try {
      const broken = sh([TSC, "-p", "."]);
      expect(broken.code).not.toBe(0);
      const errors = broken.stdout.trim().split("\n").filter((line) => line.includes("error TS"));
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.every((line) => line.startsWith("capabilities/broken.check.ts"))).toBe(true);
    } finally {
      rmSync(join(project, "capabilities", "broken.check.ts"));
    }
  }, SLOW);

  test("importing docket outside docket says how to run capability files instead", () => {
    const result = sh(["node", "-e", 'import("docket").catch((e) => { console.error(e.message); process.exit(3); })']);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("npx docket run");
  });

  test("the launcher passes SIGINT and SIGTERM on, a signal to the process group counts once, and it exits with docket's code", async () => {
    // To the launcher alone (`kill -INT <pid>`, a supervisor), or to the whole group (a Ctrl-C,
    // `kill -TERM -<group>`), which reaches docket directly and through the launcher (on Node
    // before 22.15; from 22.15 the launcher is docket itself).
    const cases = [["SIGINT", false], ["SIGINT", true], ["SIGTERM", false], ["SIGTERM", true]] as const;
    for (const [signal, toGroup] of cases) {
      // Its own process group, as a shell gives a foreground job: Ctrl-C signals the whole group.
      const child = spawn("node", [join(project, "node_modules", "docket", "bin", "docket.js"), "run", "demo.spin"], { cwd: project, detached: true, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] });
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      let stderr = "";
      await new Promise<void>((resolve) => child.stderr!.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes("step spin")) resolve();
      }));
      process.kill(toGroup ? -child.pid! : child.pid!, signal);
      expect({ signal, toGroup, code: await exited }).toEqual({ signal, toGroup, code: 130 });
      // One press: docket asked the handler to stop and it did; a second would have stopped it by force.
      expect(stderr).toContain(signal === "SIGINT" ? "cancelling… press Ctrl-C again to stop now" : "cancelling… a second SIGTERM stops it now");
      expect(stderr).not.toContain("stopping now");
    }
  }, SLOW);

  test("the launcher says what to do when npm left out the platform's package", () => {
    const platformDir = join(project, "node_modules", "@docket", "linux-x64");
    renameSync(platformDir, `${platformDir}.away`);
    try {
      const result = sh(["node", join(project, "node_modules", "docket", "bin", "docket.js"), "--version"]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("The package @docket/linux-x64, which holds docket's binary for this machine, is not installed.");
      expect(result.stderr).toContain("npm install --include=optional docket");
    } finally {
      renameSync(`${platformDir}.away`, platformDir);
    }
  });
});

// The npm package's launcher on a musl Linux (Alpine): npm leaves the glibc-linked binary's
// package out there, and reinstalling with optional dependencies would skip it again — the
// launcher says why instead (distribution tester, session 41). musl is faked through Node's report.
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const TEMPLATE = join(import.meta.dir, "..", "..", "scripts", "npm-template", "bin", "docket.js");

test("the npm launcher on musl says the binaries need glibc, and elsewhere that the optional package is missing", () => {
  const dir = mkdtempSync(join(tmpdir(), "docket-launcher-"));
  try {
    mkdirSync(join(dir, "bin"));
    writeFileSync(join(dir, "package.json"), '{"type":"module"}');
    writeFileSync(join(dir, "bin", "docket.js"), readFileSync(TEMPLATE, "utf8").replace('"@TARGETS@"', `"linux-${process.arch}"`));
    const run = (preload: string[]) => Bun.spawnSync(["node", ...preload, join(dir, "bin", "docket.js"), "--version"], { stdout: "pipe", stderr: "pipe" });
    const musl = run(["--import", "data:text/javascript,process.report.getReport = () => ({ header: {} });"]);
    expect(musl.exitCode).toBe(1);
    expect(musl.stderr.toString()).toContain("docket's Linux binaries link glibc, and this Linux runs on musl");
    expect(musl.stderr.toString()).not.toContain("--include=optional");
    const glibc = run([]);
    expect(glibc.exitCode).toBe(1);
    expect(glibc.stderr.toString()).toContain("npm install --include=optional docket");
    // The package installed anyway (Yarn 1 ignores npm's libc field): the binary is there, and its
    // loader is not (distribution tester, session 47: "spawn … ENOENT" of a file that exists).
    const binary = join(dir, "node_modules", "@docket", `linux-${process.arch}`, "bin", "docket");
    mkdirSync(join(binary, ".."), { recursive: true });
    writeFileSync(join(binary, "..", "..", "package.json"), JSON.stringify({ name: `@docket/linux-${process.arch}`, version: "0.0.0" }));
    writeFileSync(binary, "#!/lib/ld-musl-missing.so.1\n", { mode: 0o755 });
    const installed = run(["--import", "data:text/javascript,process.report.getReport = () => ({ header: {} });"]);
    expect(installed.exitCode).toBe(1);
    expect(installed.stderr.toString()).toContain(`docket: cannot start ${binary}: docket's Linux binaries link glibc, and this Linux runs on musl`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

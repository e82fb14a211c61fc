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
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// `npm run release`: every artifact checked — name, executable format and architecture, SHA256SUMS,
// release.json — and the binaries this machine can run (linux-x64; linux-arm64 under qemu-aarch64)
// run --version and a user's capability. The default suite builds the two Linux targets;
// DOCKET_TEST_RELEASE=all (`npm run test:release`, which CI runs) builds every released one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { gitCommit } from "../../scripts/build.ts";
import { RELEASE_TARGETS, releaseFileName } from "../../scripts/release-targets.ts";
import { sha256File } from "../../runtime/capability/sha256-file.ts";
import { GREET } from "../cli/_fixtures.ts";
import { REPO, removeTempDirs, tempCheckout, writeFiles, docket, fromBinary, type DocketRunner } from "../cli/_harness.ts";
import { TEST_TARGETS, testRelease, type BuiltRelease } from "./_release.ts";

const ALL = process.env.DOCKET_TEST_RELEASE === "all";
const TARGETS = TEST_TARGETS;
const AARCH64_ROOT = "/usr/aarch64-linux-gnu";
const QEMU = Bun.which("qemu-aarch64") !== null && existsSync(join(AARCH64_ROOT, "lib", "ld-linux-aarch64.so.1"));
const FILE = Bun.which("file") !== null;
const SLOW = 120_000;
let release: BuiltRelease;

beforeAll(async () => {
  release = await testRelease();
}, 300_000);

afterAll(() => {
  removeTempDirs();
});

/** The linux-arm64 binary through qemu's user mode, with Debian's arm64 libc as its root. */
function underQemu(path: string): DocketRunner {
  return { name: "qemu-aarch64", argv: () => ["env", `QEMU_LD_PREFIX=${AARCH64_ROOT}`, "qemu-aarch64", path] };
}

describe("npm run release", () => {
  test("npm run release names each binary docket-<version>-<os>-<arch>[.exe] and lists them with the installers in SHA256SUMS, and in release.json", async () => {
    const files = TARGETS.map((name) => releaseFileName(pkg.version, RELEASE_TARGETS.find((t) => t.name === name)!));
    expect(readdirSync(release.releaseDir).sort()).toEqual([...files, "SHA256SUMS", "install.ps1", "install.sh", "release.json"].sort());
    expect(readdirSync(release.npmDir).sort()).toEqual(["docket", ...TARGETS].sort());
    if (ALL) expect(files).toEqual(["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "windows-x64.exe", "windows-arm64.exe"].map((t) => `docket-${pkg.version}-${t}`));

    const sums = readFileSync(join(release.releaseDir, "SHA256SUMS"), "utf8");
    const lines = sums.trimEnd().split("\n");
    expect(lines).toHaveLength(files.length + 2);
    expect(lines.slice(files.length).map((l) => l.split("  ")[1])).toEqual(["install.sh", "install.ps1"]);
    const manifest = JSON.parse(readFileSync(join(release.releaseDir, "release.json"), "utf8"));
    expect(manifest).toMatchObject({ name: "docket", version: pkg.version, commit: gitCommit(), bun: Bun.version });
    for (const [i, file] of files.entries()) {
      const { hex, bytes } = await sha256File(join(release.releaseDir, file));
      expect(lines[i]).toBe(`${hex}  ${file}`);
      expect(manifest.artifacts[i]).toEqual({ target: TARGETS[i], os: TARGETS[i]!.split("-")[0], arch: TARGETS[i]!.split("-")[1], file, bytes, sha256: hex });
    }
  }, SLOW);

  test("npm run release: every npm package is published under the repository's license (package.json's) and carries its LICENSE", () => {
    expect(pkg.license).toBe("MIT");
    const license = readFileSync(join(REPO, "LICENSE"), "utf8");
    expect(license).toStartWith("MIT License");
    for (const name of ["docket", ...TARGETS]) {
      const manifest = JSON.parse(readFileSync(join(release.npmDir, name, "package.json"), "utf8"));
      expect(`${name}: ${manifest.license}`).toBe(`${name}: MIT`);
      expect(readFileSync(join(release.npmDir, name, "LICENSE"), "utf8")).toBe(license);
    }
  });

  test.skipIf(!FILE)("npm run release writes each target's executable format and architecture (ELF, Mach-O, PE)", () => {
    for (const artifact of release.manifest.artifacts) {
      const target = RELEASE_TARGETS.find((t) => t.name === artifact.target)!;
      const said = Bun.spawnSync(["file", "-b", join(release.releaseDir, artifact.file)]).stdout.toString();
      expect(`${artifact.target}: ${said}`).toMatch(new RegExp(`^${artifact.target}: ${target.format.source}`));
    }
  });

  test("npm run release: the release folder verifies with docket's own files.verify, run by the linux-x64 binary", async () => {
    const binary = fromBinary(join(release.releaseDir, `docket-${pkg.version}-linux-x64`));
    const verified = await docket(binary, ["run", "files.verify", "--input", '{"manifest":"SHA256SUMS"}', "--format", "json"], { cwd: release.releaseDir });
    expect(verified.stderr).not.toContain("malformed");
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout).output).toMatchObject({ files: TARGETS.length + 2, ok: true });
  }, SLOW);

  const runnable: Array<[string, boolean, (path: string) => DocketRunner]> = [
    ["linux-x64", process.platform === "linux" && process.arch === "x64", fromBinary],
    ["linux-arm64", QEMU && process.platform === "linux", underQemu],
  ];
  for (const [target, can, runner] of runnable) {
    test.skipIf(!can)(`the ${target} binary runs --version and a user's capability file`, async () => {
      const binary = runner(join(release.releaseDir, `docket-${pkg.version}-${target}`));
      const checkout = tempCheckout();
      writeFiles(checkout, { "capabilities/demo.greet.ts": GREET });
      const version = await docket(binary, ["--version"], { cwd: checkout });
      expect(version).toMatchObject({ code: 0, stdout: `docket ${pkg.version} (commit ${release.manifest.commit}, ${target})\n` });
      const ran = await docket(binary, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--format", "json"], { cwd: checkout });
      expect(ran.code).toBe(0);
      expect(JSON.parse(ran.stdout).output).toEqual({ greeting: "Hello, Ada!" });
    }, SLOW);
  }
});

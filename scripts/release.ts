// `npm run release`: the binary for every platform in dist/release/, with SHA256SUMS and a
// manifest, and the npm packages in dist/npm/ (docs/distribution.md).
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sha256File } from "../runtime/capability/sha256-file.ts";
import { DOCKET_VERSION } from "../runtime/version.ts";
import { CLI_ENTRY, compileDocket, gitCommit, WORKER_ENTRIES } from "./build.ts";
import { generateDeclarations } from "./declarations.ts";
import { adhocSign, verifyAdhocSignature } from "./macho-sign.ts";
import { writeNpmPackages } from "./npm-packages.ts";
import { RELEASE_TARGETS, releaseFileName, releaseTarget, type ReleaseTarget } from "./release-targets.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
/** The install scripts a release carries beside its binaries. */
export const INSTALLERS = ["install.sh", "install.ps1"];

/** Where `npm run release` writes the binaries and the npm packages. */
export const DIST = fileURLToPath(new URL("../dist", import.meta.url));

/** One file of a release, as the manifest lists it. */
export interface ReleaseArtifact {
  target: string;
  os: ReleaseTarget["os"];
  arch: ReleaseTarget["arch"];
  file: string;
  bytes: number;
  sha256: string;
}

/** `release.json`: what was built, from which commit, with which Bun. */
export interface ReleaseManifest {
  name: "docket";
  version: string;
  commit: string;
  bun: string;
  artifacts: ReleaseArtifact[];
}

/** Options of `buildRelease`. */
export interface ReleaseOptions {
  /** The folder that receives `release/` and `npm/`; replaced whole, never left half-written. */
  dist?: string;
  /** Target names; every released platform when left out. */
  targets?: string[];
  /** Also write the npm packages (default true). */
  npm?: boolean;
  /** Called as each target is done, for progress. */
  onTarget?: (artifact: ReleaseArtifact, ms: number) => void;
}

/**
 * Compiles every target into `<dist>/release/`, copies install.sh and install.ps1 beside them,
 * writes `SHA256SUMS` (the `sha256sum` format that `sha256sum -c` and files.verify read) and `release.json`, then the npm packages into `<dist>/npm/`.
 * Everything is written beside the old release first and swapped in at the end, so a release
 * killed halfway leaves the previous one whole, never a SHA256SUMS that lies about its files.
 */
export async function buildRelease(options: ReleaseOptions = {}): Promise<ReleaseManifest> {
  const dist = options.dist ?? DIST;
  const targets = (options.targets ?? RELEASE_TARGETS.map((t) => t.name)).map(releaseTarget);
  const commit = gitCommit();
  const version = DOCKET_VERSION;
  const declarations = generateDeclarations();
  const staging = join(dist, `.release-${process.pid}`);
  removeAbandonedStaging(dist);
  const releaseDir = join(staging, "release");
  mkdirSync(releaseDir, { recursive: true });
  try {
    const artifacts: ReleaseArtifact[] = [];
    for (const target of targets) {
      const file = releaseFileName(version, target);
      const built = await compileDocket({ entrypoints: [CLI_ENTRY, ...WORKER_ENTRIES], outfile: join(releaseDir, file), target, commit, declarations });
      if (target.os === "darwin") signForMac(built.outfile);
      const { hex, bytes } = await sha256File(built.outfile);
      const artifact: ReleaseArtifact = { target: target.name, os: target.os, arch: target.arch, file, bytes, sha256: hex };
      artifacts.push(artifact);
      options.onTarget?.(artifact, built.ms);
    }
    const manifest: ReleaseManifest = { name: "docket", version, commit, bun: Bun.version, artifacts };
    // The installers travel with the release, so that `…/releases/latest/download/install.sh` is
    // the one that knows this release's names; SHA256SUMS covers them too.
    const installers: string[] = [];
    for (const installer of INSTALLERS) {
      copyFileSync(join(REPO, installer), join(releaseDir, installer));
      installers.push(`${(await sha256File(join(releaseDir, installer))).hex}  ${installer}\n`);
    }
    writeFileSync(join(releaseDir, "SHA256SUMS"), [...artifacts.map((a) => `${a.sha256}  ${a.file}\n`), ...installers].join(""));
    writeFileSync(join(releaseDir, "release.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    if (options.npm !== false) writeNpmPackages({ releaseDir, npmDir: join(staging, "npm"), manifest, declarations });
    for (const part of ["release", "npm"]) {
      if (!existsSync(join(staging, part))) continue;
      rmSync(join(dist, part), { recursive: true, force: true });
      renameSync(join(staging, part), join(dist, part));
    }
    return manifest;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * Signs a macOS binary ad hoc and proves it: Bun 1.4.5 cross-compiling darwin-x64 leaves its
 * runtime's signature, which no longer matches the file (scripts/macho-sign.ts). darwin-arm64 is
 * signed again too, so both say "docket". A release never publishes a binary that fails the check.
 */
function signForMac(path: string): void {
  adhocSign(path, "docket");
  const check = verifyAdhocSignature(path);
  if (!check.ok) throw new Error(`${path}: its ad hoc signature does not check after signing: ${check.problem}`);
}

/** Staging folders of releases that were killed (their process is gone): ~0.5 GiB each. */
function removeAbandonedStaging(dist: string): void {
  if (!existsSync(dist)) return;
  for (const name of readdirSync(dist)) {
    const pid = /^\.release-(\d+)$/.exec(name)?.[1];
    if (pid === undefined) continue;
    let alive = Number(pid) !== process.pid;
    try {
      if (alive) process.kill(Number(pid), 0);
    } catch (error) {
      alive = (error as NodeJS.ErrnoException).code === "EPERM";
    }
    if (!alive) rmSync(join(dist, name), { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  // An option is none of the targets: taken as one, or dropped, it built all six in place of dist/release (distribution tester, session 41).
  const usage = `Usage: npm run release [-- TARGET…]   builds the binaries of the targets named (default: all of ${RELEASE_TARGETS.map((t) => t.name).join(", ")}) into dist/release/, with SHA256SUMS and release.json, and the npm packages into dist/npm/.`;
  if (args.includes("--help") || args.includes("-h")) {
    console.log(usage);
    process.exit(0);
  }
  const option = args.find((a) => a.startsWith("-"));
  if (option !== undefined) {
    console.error(`Unknown option ${JSON.stringify(option)}: release takes the names of targets only.\n${usage}`);
    process.exit(2);
  }
  // A target named twice is built once (it was listed twice in SHA256SUMS and release.json).
  const only = [...new Set(args)];
  try {
    only.forEach(releaseTarget);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  const started = performance.now();
  const manifest = await buildRelease({
    targets: only.length > 0 ? only : undefined,
    onTarget: (a, ms) => console.log(`  ${a.file.padEnd(36)} ${(a.bytes / 2 ** 20).toFixed(1).padStart(6)} MiB  ${(ms / 1000).toFixed(1)} s`),
  });
  console.log(`docket ${manifest.version} (commit ${manifest.commit}): ${manifest.artifacts.length} ${manifest.artifacts.length === 1 ? "binary" : "binaries"}, SHA256SUMS and release.json in dist/release/, npm packages in dist/npm/ — ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

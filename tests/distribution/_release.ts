// A release built for the tests (in the temporary folder, never over dist/), and a loopback HTTP
// server that serves a release folder the way a release page does.
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gitCommit } from "../../scripts/build.ts";
import { buildRelease, type ReleaseManifest } from "../../scripts/release.ts";
import { REPO } from "../cli/_harness.ts";
import { RELEASE_TARGETS } from "../../scripts/release-targets.ts";

/** A built release: the folder of binaries and SHA256SUMS, the npm packages beside it. */
export interface BuiltRelease {
  dist: string;
  releaseDir: string;
  npmDir: string;
  manifest: ReleaseManifest;
}

/** The targets the suite builds: the two Linux ones, or every released one with DOCKET_TEST_RELEASE=all (`npm run test:release`). */
export const TEST_TARGETS: string[] = process.env.DOCKET_TEST_RELEASE === "all" ? RELEASE_TARGETS.map((t) => t.name) : ["linux-x64", "linux-arm64"];

let shared: Promise<BuiltRelease> | null = null;

/**
 * `npm run release` of TEST_TARGETS — the very function the script runs, so the tests check what
 * users download. Built once and kept in the temporary folder under a key of this checkout, its
 * commit, the sources the binary is built from and Bun's version: later runs (and every file of
 * tests/distribution in one run) reuse it, and a new build removes this checkout's older ones, and
 * those of checkouts that are gone (a clone removed after its run: 668 MB each otherwise).
 */
export function testRelease(): Promise<BuiltRelease> {
  shared ??= (async () => {
    const prefix = `docket-test-release-${digest(REPO).slice(0, 8)}-`;
    const dist = join(realpathSync(tmpdir()), `${prefix}${releaseKey()}`);
    if (!existsSync(join(dist, "release", "release.json"))) {
      // Built beside, renamed into place: a run killed halfway never leaves a release to reuse.
      const staging = mkdtempSync(`${dist}.partial-`);
      try {
        await buildRelease({ dist: staging, targets: TEST_TARGETS });
        writeFileSync(join(staging, CHECKOUT_FILE), REPO);
        renameSync(staging, dist);
      } catch (error) {
        rmSync(staging, { recursive: true, force: true });
        if (!existsSync(join(dist, "release", "release.json"))) throw error;
      }
      for (const old of readdirSync(tmpdir())) {
        if (old.startsWith(prefix) && join(realpathSync(tmpdir()), old) !== dist && !old.includes(".partial-")) rmSync(join(tmpdir(), old), { recursive: true, force: true });
      }
    }
    removeOrphans(dist);
    const manifest = JSON.parse(readFileSync(join(dist, "release", "release.json"), "utf8")) as ReleaseManifest;
    return { dist, releaseDir: join(dist, "release"), npmDir: join(dist, "npm"), manifest };
  })();
  return shared;
}

/** Names, in a built release's folder, the checkout it was built for. */
const CHECKOUT_FILE = "checkout.txt";
/** A build left half-way this long ago is no other run's, still building. */
const PARTIAL_STALE_MS = 60 * 60 * 1000;

/**
 * Removes the test releases of checkouts that no longer exist, and builds left half-way by runs
 * killed over an hour ago. A release that names no checkout (built before it was recorded) is left.
 */
function removeOrphans(own: string): void {
  const root = realpathSync(tmpdir());
  for (const name of readdirSync(root)) {
    if (!name.startsWith("docket-test-release-")) continue;
    const path = join(root, name);
    if (path === own) continue;
    try {
      if (name.includes(".partial-")) {
        if (Date.now() - statSync(path).mtimeMs > PARTIAL_STALE_MS) rmSync(path, { recursive: true, force: true });
        continue;
      }
      const checkout = join(path, CHECKOUT_FILE);
      if (existsSync(checkout) && !existsSync(join(readFileSync(checkout, "utf8"), "package.json"))) rmSync(path, { recursive: true, force: true });
    } catch {
      // Another run removing it, or not ours to read: left as it is.
    }
  }
}

/** What the binaries depend on: the commit, every source file that is bundled, Bun, the targets. */
function releaseKey(): string {
  const hash = createHash("sha256").update(`${gitCommit()}\0${Bun.version}\0${TEST_TARGETS.join(",")}\0`);
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else hash.update(`${path}\0`).update(readFileSync(path));
    }
  };
  for (const dir of ["runtime", "capabilities", "cockpit", "scripts"]) if (existsSync(join(REPO, dir))) walk(join(REPO, dir));
  for (const file of ["package.json", "package-lock.json", "tsconfig.json"]) if (existsSync(join(REPO, file))) hash.update(readFileSync(join(REPO, file)));
  return hash.digest("hex").slice(0, 16);
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** A static file server on 127.0.0.1 and the paths it was asked for. */
export interface ReleaseServer {
  url: string;
  requests: string[];
  stop(): void;
}

/** Serves the files of `dir` (no listing, no subfolders): what `DOCKET_DOWNLOAD_URL` points at. */
export function serveRelease(dir: string): ReleaseServer {
  const requests: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const name = decodeURIComponent(new URL(request.url).pathname.slice(1));
      requests.push(name);
      if (request.method !== "GET" || name === "" || name.includes("/") || name.startsWith(".")) return new Response("not found", { status: 404 });
      const file = Bun.file(join(dir, name));
      return (await file.exists()) ? new Response(file) : new Response("not found", { status: 404 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, requests, stop: () => server.stop(true) };
}

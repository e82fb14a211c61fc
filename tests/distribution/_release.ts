// A release built for the tests (into a temporary folder, never over dist/), and a loopback HTTP
// server that serves a release folder the way a release page does.
import { join } from "node:path";
import { buildRelease, type ReleaseManifest } from "../../scripts/release.ts";
import { tempDir } from "../cli/_harness.ts";

/** A built release: the folder of binaries and SHA256SUMS, the npm packages beside it. */
export interface BuiltRelease {
  dist: string;
  releaseDir: string;
  npmDir: string;
  manifest: ReleaseManifest;
}

const built = new Map<string, Promise<BuiltRelease>>();

/**
 * `npm run release` for the given targets, once per test file (its removeTempDirs deletes it):
 * the very function the script runs, so the tests check what users download.
 */
export function releaseFor(targets: string[], options: { npm?: boolean } = {}): Promise<BuiltRelease> {
  const key = `${targets.join(",")}|${options.npm !== false}`;
  let release = built.get(key);
  if (!release) {
    release = (async () => {
      const dist = tempDir("release");
      const manifest = await buildRelease({ dist, targets, npm: options.npm });
      return { dist, releaseDir: join(dist, "release"), npmDir: join(dist, "npm"), manifest };
    })();
    built.set(key, release);
  }
  return release;
}

/** Forgets the releases built so far (their folders go with removeTempDirs). */
export function forgetReleases(): void {
  built.clear();
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

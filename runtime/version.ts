import pkg from "../package.json" with { type: "json" };

/** docket's version, from package.json (bundled into the binary). */
export const DOCKET_VERSION: string = pkg.version;

/** What a compiled binary knows about its own build; scripts/build.ts bakes it in (docs/distribution.md). */
export interface BuildStamp {
  /** The git commit built from, 12 hex digits, with `+dirty` when the worktree had changes. */
  commit: string;
  /** The release target, `<os>-<arch>`: linux-x64, darwin-arm64, windows-x64, … */
  target: string;
}

// Replaced by a literal through Bun.build's `define` when compiling; undeclared when run from source.
declare const __DOCKET_BUILD__: BuildStamp | undefined;

/** The compiled binary's build stamp, or null when docket runs from source. */
export const BUILD_STAMP: BuildStamp | null = typeof __DOCKET_BUILD__ === "undefined" ? null : __DOCKET_BUILD__;

/** This machine as a release target name: the `<os>-<arch>` of `docket-<version>-<os>-<arch>`. */
export function hostTarget(platform: string = process.platform, arch: string = process.arch): string {
  return `${platform === "win32" ? "windows" : platform}-${arch}`;
}

/** The ways to ask for the version, alone on the command line: `-V` as Python and GNU tools spell it too. */
export const VERSION_FLAGS: readonly string[] = ["--version", "-v", "-V"];

/**
 * What `docket --version` prints: the version first (what scripts cut out), then where the binary
 * came from, so a bug report names the exact build.
 */
export function versionText(stamp: BuildStamp | null = BUILD_STAMP): string {
  if (stamp) return `docket ${DOCKET_VERSION} (commit ${stamp.commit}, ${stamp.target})`;
  const bun = typeof Bun === "undefined" ? `node ${process.versions.node}` : `bun ${Bun.version}`;
  return `docket ${DOCKET_VERSION} (from source, ${hostTarget()}, ${bun})`;
}

/** `docket --version --format json`: the same facts as versionText, one field each. */
export function versionDocument(stamp: BuildStamp | null = BUILD_STAMP): { version: string; commit: string | null; target: string; runtime: string | null } {
  if (stamp) return { version: DOCKET_VERSION, commit: stamp.commit, target: stamp.target, runtime: null };
  const runtime = typeof Bun === "undefined" ? `node ${process.versions.node}` : `bun ${Bun.version}`;
  return { version: DOCKET_VERSION, commit: null, target: hostTarget(), runtime };
}

// The npm packages of a release: `docket` (the launcher, the module's types) and one
// `@docket/<os>-<arch>` per binary, which `docket` names as optional dependencies so that npm
// installs only the one matching the machine (docs/distribution.md).
import { chmodSync, copyFileSync, existsSync, linkSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import rootPackage from "../package.json" with { type: "json" };
import { generateDeclarations, type DeclarationFiles } from "./declarations.ts";
import { releaseTarget } from "./release-targets.ts";
import type { ReleaseManifest } from "./release.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const TEMPLATE = join(REPO, "scripts", "npm-template");
/** The project's home, named in every package.json. */
export const PROJECT_URL = "https://github.com/docket-dev/docket";

/** Options of `writeNpmPackages`. */
export interface NpmPackagesOptions {
  /** The folder holding the release's binaries. */
  releaseDir: string;
  /** Where `docket/` and one folder per target are written. */
  npmDir: string;
  manifest: ReleaseManifest;
  /** The declarations the binaries embed (made again when left out). */
  declarations?: DeclarationFiles;
}

/** Writes `<npmDir>/docket/` and `<npmDir>/<target>/` for every binary of the manifest; each is ready for `npm pack`. */
export function writeNpmPackages(options: NpmPackagesOptions): void {
  const { manifest, npmDir } = options;
  // Every package is published under the repository's license, and carries its text.
  const common = { version: manifest.version, license: rootPackage.license, repository: { type: "git", url: `git+${PROJECT_URL}.git` } };
  for (const artifact of manifest.artifacts) {
    const target = releaseTarget(artifact.target);
    const dir = join(npmDir, target.name);
    mkdirSync(join(dir, "bin"), { recursive: true });
    const binary = join(dir, "bin", `docket${target.suffix}`);
    linkOrCopy(join(options.releaseDir, artifact.file), binary);
    copyFileSync(join(REPO, "LICENSE"), join(dir, "LICENSE"));
    writeJson(join(dir, "package.json"), {
      name: `@docket/${target.name}`,
      ...common,
      description: `The docket binary for ${target.name}; installed by the docket package, not meant to be installed alone.`,
      os: [target.npmOs],
      cpu: [target.npmCpu],
      // Bun's Linux builds link glibc; npm leaves the package out on musl (Alpine) and the launcher says why.
      ...(target.os === "linux" ? { libc: ["glibc"] } : {}),
      files: ["bin", "LICENSE"],
      preferUnplugged: true,
    });
    writeFileSync(join(dir, "README.md"), `# @docket/${target.name}\n\nThe \`docket\` binary for ${target.name} (commit ${manifest.commit}). Install [\`docket\`](${PROJECT_URL}) instead; it picks this package on ${target.name}.\n`);
  }

  const dir = join(npmDir, "docket");
  mkdirSync(join(dir, "bin"), { recursive: true });
  const targets = manifest.artifacts.map((a) => a.target);
  const launcher = readFileSync(join(TEMPLATE, "bin", "docket.js"), "utf8").replace('["@TARGETS@"]', JSON.stringify(targets));
  writeFileSync(join(dir, "bin", "docket.js"), launcher, { mode: 0o755 });
  copyFileSync(join(TEMPLATE, "index.js"), join(dir, "index.js"));
  const namesNode = writeDeclarations(options.declarations ?? generateDeclarations(), join(dir, "types"));
  copyFileSync(join(REPO, "LICENSE"), join(dir, "LICENSE"));
  if (existsSync(join(REPO, "README.md"))) copyFileSync(join(REPO, "README.md"), join(dir, "README.md"));
  writeJson(join(dir, "package.json"), {
    name: "docket",
    ...common,
    description: rootPackage.description,
    type: "module",
    bin: { docket: "bin/docket.js" },
    types: "./types/public.d.ts",
    exports: { ".": { types: "./types/public.d.ts", default: "./index.js" }, "./text-imports": { types: "./types/text-imports.d.ts" }, "./package.json": "./package.json" },
    files: ["bin", "index.js", "types", "LICENSE"],
    // The types of a capability's schemas are valibot's: the very version the binary serves.
    // @types/node only when a declaration names Node's types; "*" takes whichever the project
    // has, since two copies would clash on Node's globals.
    dependencies: { valibot: installedVersion("valibot"), ...(namesNode ? { "@types/node": "*" } : {}) },
    optionalDependencies: Object.fromEntries(targets.map((t) => [`@docket/${t}`, manifest.version])),
    engines: { node: ">=18" },
  });
}

/**
 * The public API's declarations, as `docket types` has them (scripts/declarations.ts), under
 * `types/`. Their imports name `.ts` files, which a consumer's tsc resolves only with
 * `allowImportingTsExtensions`; here they name `.js`, which every resolution mode maps to the
 * `.d.ts` beside it. valibot's own types come with the valibot dependency; Node's with @types/node,
 * a dependency only while some declaration names them. Answers whether one does.
 */
function writeDeclarations(declarations: DeclarationFiles, outDir: string): boolean {
  let namesNode = false;
  for (const [name, text] of Object.entries(declarations)) {
    if (!name.startsWith("docket/")) continue;
    const path = join(outDir, name.slice("docket/".length));
    mkdirSync(dirname(path), { recursive: true });
    // The text-import module patterns (`declare module "*.svg"`) are ambient: referenced from the
    // package's entry they reach the project's whole program and clash with its own `*.svg`
    // (distribution tester, session 47). In the package they are opt-in: `docket/text-imports`.
    const entry = name === "docket/public.d.ts" ? text.replace(/^\/\/\/ <reference path="\.\/text-imports\.d\.ts" \/>\n/, "") : text;
    const rewritten = entry.replace(/(from\s+|import\()(["'])(\.{1,2}\/[^"']+)\.ts\2/g, "$1$2$3.js$2");
    // A declaration naming Node's types (openRegularFile's FileHandle) pulls them in itself, so it
    // checks under a tsconfig whose `types` leaves Node out.
    const node = /(from\s+|import\()["']node:/.test(rewritten);
    namesNode ||= node;
    writeFileSync(path, node ? `/// <reference types="node" />\n${rewritten}` : rewritten);
  }
  return namesNode;
}

// A hard link: the binaries are ~100 MiB each, and the release folder already holds them.
function linkOrCopy(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
    chmodSync(to, 0o755);
  }
}

function installedVersion(name: string): string {
  return JSON.parse(readFileSync(join(REPO, "node_modules", name, "package.json"), "utf8")).version;
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}


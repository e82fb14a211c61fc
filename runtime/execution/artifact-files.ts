import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ArtifactInfo } from "./plane.ts";

/**
 * How the file an artifact is written into begins, in its execution's folder, until it is whole
 * and renamed to its name: never listed, and no artifact may be named so (docs/handler-api.md).
 */
export const PARTIAL_ARTIFACT_PREFIX = ".docket-partial-";

/** The artifact names of a folder's entries: what a write in progress (or cut short by a crash) left is not one. */
const isArtifactName = (name: string) => !name.startsWith(PARTIAL_ARTIFACT_PREFIX);

/** The managed output folder of one execution (docs/handler-api.md). */
export function artifactsDir(root: string, id: string): string {
  return join(root, ".docket", "artifacts", id);
}

/** Lists regular files of an execution's artifact folder with size and SHA-256; symlinks are ignored. */
export function listArtifacts(root: string, id: string): ArtifactInfo[] {
  const dir = artifactsDir(root, id);
  let names: string[];
  try {
    names = readdirSync(dir).filter(isArtifactName).sort();
  } catch {
    return [];
  }
  const files: ArtifactInfo[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (!stat.isFile()) continue;
    files.push({ name, bytes: stat.size, sha256: createHash("sha256").update(readFileSync(path)).digest("hex") });
  }
  return files;
}

/**
 * True when an execution's artifact folder holds anything: its artifacts are not released. Cheap
 * (one readdir). A partial file a crash left counts too: the execution is kept until it is
 * released, which removes the folder with it, never forgotten with its folder left behind.
 */
export function hasArtifacts(root: string, id: string): boolean {
  try {
    return readdirSync(artifactsDir(root, id)).length > 0;
  } catch {
    return false;
  }
}

/** Deletes an execution's artifact folder; returns how many files it held. */
export function removeArtifacts(root: string, id: string): number {
  const count = listArtifacts(root, id).length;
  rmSync(artifactsDir(root, id), { recursive: true, force: true });
  return count;
}

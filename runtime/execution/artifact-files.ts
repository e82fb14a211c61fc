import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ArtifactInfo } from "./plane.ts";

/** The managed output folder of one execution (docs/handler-api.md). */
export function artifactsDir(root: string, id: string): string {
  return join(root, ".docket", "artifacts", id);
}

/** Lists regular files of an execution's artifact folder with size and SHA-256; symlinks are ignored. */
export function listArtifacts(root: string, id: string): ArtifactInfo[] {
  const dir = artifactsDir(root, id);
  let names: string[];
  try {
    names = readdirSync(dir).sort();
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

/** True when an execution's artifact folder holds anything: its artifacts are not released. Cheap (one readdir). */
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

import { createHash } from "node:crypto";
import { DOCKET_VERSION } from "../version.ts";

/**
 * The version of a capability file that imports no local module: a digest of its source text, so
 * that every execution can say which code ran (docs/authoring.md, "Versions"). One that imports
 * local modules digests them all (capability-sources.ts).
 */
export function fileVersion(text: string): string {
  return `sha256:${createHash("sha256").update(text).digest("hex").slice(0, 16)}`;
}

/** The version of a built-in capability: the docket release it is bundled in. */
export function builtinVersion(): string {
  return `docket@${DOCKET_VERSION}`;
}

/**
 * The specifier a capability file is imported by, one per version: the runtime caches a module by
 * its specifier, so an edited file gets a fresh module while a running execution keeps the one it
 * started with. A path, not a file:// URL: Bun ignores the query of a file:// URL.
 */
export function versionedSpecifier(file: string, version: string): string {
  return `${file}?docket_version=${version.replace(/^sha256:/, "")}`;
}

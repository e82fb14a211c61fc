// The JSON configs docket reads beside capability files — tsconfig.json and the configs it
// extends, package.json — as it reads a capability's imports: each read once per change, never
// blocking on what is no regular file (docs/authoring.md, "Live reload").
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";
import { parseJsonc } from "./jsonc.ts";

/** How many configs are kept parsed; a checkout has a handful, a monorepo some hundreds. */
const KEPT = 512;

/** Parsed configs by path, with what identified the file they were parsed from. */
const parsed = new Map<string, { identity: string; value: Record<string, unknown> | null }>();

/**
 * The JSON object in the config at `path` (comments and trailing commas allowed, as TypeScript reads
 * a tsconfig.json), or null when there is none: missing, no regular file, not an object, or not
 * JSON. A FIFO, a device or a socket named like a config is never read: opened without waiting
 * and told apart on the open descriptor, as open-regular-file.ts does, so a planted FIFO cannot
 * hold the thread that reads it. A config is parsed again only when its file changed (its inode,
 * size, modification or change time): every capability importing through an alias asks for it.
 */
export function readConfigJson(path: string): Record<string, unknown> | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch {
    parsed.delete(path);
    return null;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) {
      parsed.delete(path);
      return null;
    }
    const identity = `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
    const kept = parsed.get(path);
    if (kept?.identity === identity) return kept.value;
    const value = parse(readFileSync(fd, "utf8"));
    if (parsed.size >= KEPT) parsed.clear();
    parsed.set(path, { identity, value });
    return value;
  } catch {
    parsed.delete(path);
    return null;
  } finally {
    closeSync(fd);
  }
}

/** Plain JSON at the runtime's own speed; JSON with comments (a `tsc --init` tsconfig.json) by parseJsonc. */
function parse(text: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    try {
      value = parseJsonc(text);
    } catch {
      return null;
    }
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** True when `path` is a regular file whose text is not a JSON object (comments and trailing commas allowed): a config being edited, or broken. */
export function configDoesNotParse(path: string): boolean {
  // Only a regular file read whole is kept, its value null when it did not parse.
  return readConfigJson(path) === null && parsed.has(path);
}

/** What the parser said of a config that does not parse (`JSON Parse error: Expected '}'`), or null when it parses or cannot be read. */
export function configParseError(path: string): string | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return null;
  }
  try {
    parseJsonc(text);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

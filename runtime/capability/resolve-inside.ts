import { readlink, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { CapabilityError } from "./capability-error.ts";

/** Symbolic links followed by hand before giving up, as the kernel's own bound (Linux: 40). */
const MAX_LINKS = 40;

/** Options of `resolveInside`. */
export interface ResolveInsideOptions {
  /** What the path is, for the error message (`input.path`, `manifest line 3`). */
  label?: string;
}

/**
 * Resolves a path a client gave, relative to the checkout root, and refuses it unless it stays
 * inside: absolute paths, `..` escapes and symlinks leading out (checked with realpath on the
 * nearest existing ancestor, so a path still to be created is checked too) are
 * `CapabilityError("invalid_input")` naming the path. Returns the absolute path.
 */
export async function resolveInside(root: string, path: string, options: ResolveInsideOptions = {}): Promise<string> {
  const label = options.label ?? "path";
  const refuse = (why: string) =>
    new CapabilityError("invalid_input", `${label} ${JSON.stringify(path)} ${why}; give a path relative to the checkout root, like "src" or "docs/a.txt"`, {
      context: { path },
    });
  if (path.includes("\0")) throw refuse("contains a NUL byte");
  if (isAbsolute(path) || /^[a-zA-Z]:[\\/]/.test(path)) throw refuse("is absolute");
  const base = resolve(root);
  const target = resolve(base, path);
  if (!isWithin(base, target)) throw refuse("leads outside the checkout");
  let realBase: string;
  let realTarget: string;
  try {
    realBase = await realpath(base);
    realTarget = await realpathOfNearest(target);
  } catch (error) {
    throw refuse(`cannot be resolved (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  if (!isWithin(realBase, realTarget)) throw refuse("leads outside the checkout through a symbolic link");
  return target;
}

/** True when `path` is `base` or below it. */
export function isWithin(base: string, path: string): boolean {
  const rel = relative(base, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** realpath of the path, or of its nearest existing ancestor joined with the rest; follows dangling links. */
async function realpathOfNearest(path: string): Promise<string> {
  const missing: string[] = [];
  let current = path;
  for (let links = 0; links <= MAX_LINKS; ) {
    try {
      return join(await realpath(current), ...missing.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
      // A dangling link still says where a write through it would land: follow it by hand.
      const link = await readlink(current).catch(() => null);
      if (link !== null) {
        current = resolve(dirname(current), link);
        links++;
        continue;
      }
      if (dirname(current) === current) throw error;
      missing.push(basename(current));
      current = dirname(current);
    }
  }
  throw Object.assign(new Error(`too many symbolic links under ${path}`), { code: "ELOOP" });
}

import { capability, CapabilityError, globMatcher, openRegularFile, resolveInside, sha256File, type CapabilityContext } from "docket";
import * as v from "valibot";
import { createHash } from "node:crypto";
import { constants, type Dirent } from "node:fs";
import { lstat, open, readdir, readlink, realpath, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";

/** Folders no one wants in a manifest; met during the walk they are skipped (a `path` inside one is still digested). */
const SKIPPED_FOLDERS = [".git", ".docket", "node_modules"];

const MANIFEST_NAME = "manifest.sha256";

export default capability({
  id: "files.digest",
  title: "Digest files",
  description:
    "SHA-256 of every file under a folder of the checkout, as a sha256sum manifest (paths relative to the checkout root, sorted), written as the artifact manifest.sha256. Check it later with files.verify or `sha256sum -c`.",
  effect: "read",
  cancellable: true,
  errors: ["unreadable_files"],
  input: v.object({
    path: v.optional(v.pipe(v.string(), v.description("Folder (or one file) of the checkout to digest, relative to its root.")), "."),
    include: v.optional(
      v.pipe(
        v.array(v.string()),
        v.description("Globs of files to digest, relative to path; a pattern without / matches a name at any depth (\"*.ts\"). Default: every file."),
      ),
    ),
    exclude: v.optional(
      v.pipe(v.array(v.string()), v.description("Globs to leave out, matched like include; a matching folder is not walked. .git, .docket and node_modules are always left out.")),
    ),
  }),
  output: v.object({
    files: v.pipe(v.number(), v.description("Files in the manifest.")),
    bytes: v.pipe(v.number(), v.description("Bytes hashed.")),
    digest: v.pipe(v.string(), v.description("SHA-256 of the manifest text: one value that changes when any file does.")),
    manifest_artifact: v.optional(v.pipe(v.string(), v.description("The artifact holding the manifest, in an execution."))),
    manifest: v.optional(v.pipe(v.string(), v.description("The manifest itself, in a direct call (no artifact folder)."))),
  }),
  examples: [{ path: "." }, { path: "src", include: ["*.ts"], exclude: ["*.test.ts"] }],
  async handler(input, ctx) {
    const base = await resolveInside(ctx.root, input.path, { label: "input.path" });
    const realRoot = await realpath(ctx.root);
    await mustExist(base, input.path);

    ctx.progress.step("walk", `List files under ${input.path}`);
    const files = await listFiles(base, realRoot, ctx, {
      include: input.include && input.include.length > 0 ? globMatcher(input.include) : null,
      exclude: globMatcher([...SKIPPED_FOLDERS, ...(input.exclude ?? [])]),
    });
    ctx.progress.stepDone("walk", true, `${files.length} files`);

    ctx.progress.step("hash", "SHA-256 of each file");
    const lines: string[] = [];
    const unreadable: string[] = [];
    let bytes = 0;
    for (let i = 0; i < files.length; i++) {
      if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
      const file = files[i]!;
      try {
        // Checked on the open file: a link put in its place after the walk leads nowhere outside.
        const hashed = await sha256File(file.abs, ctx.progress, { label: file.rel, inside: ctx.root });
        bytes += hashed.bytes;
        lines.push(manifestLine(hashed.hex, file.rel));
      } catch (error) {
        if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
        unreadable.push(file.rel);
        // A name that is not UTF-8 is listed decoded, with U+FFFD for its bad bytes, and that name
        // opens nothing: said as what it is, not as a file that does not exist (foundation tester, session 48).
        const badName = (error as NodeJS.ErrnoException).code === "ENOENT" && file.rel.includes("\uFFFD");
        const why = badName ? "its name is not valid UTF-8 (shown with � for the bytes that are not), which a manifest cannot name; rename it, or exclude it" : (error as Error).message;
        ctx.progress.diagnostic({ severity: "error", code: badName ? "name_not_utf8" : "unreadable", file: file.rel, message: `Cannot read ${file.rel}: ${why}` });
      }
      ctx.progress.progress(i + 1, files.length, file.rel);
    }
    ctx.progress.stepDone("hash", unreadable.length === 0, `${lines.length} files, ${bytes} bytes`);
    if (unreadable.length > 0) {
      throw new CapabilityError("unreadable_files", `${unreadable.length} of ${files.length} files could not be read, so no manifest was written; see the diagnostics: fix what each says (permissions, a name), or exclude those files`, {
        context: { unreadable: unreadable.length, first: unreadable.slice(0, 10) },
      });
    }

    const manifest = lines.join("");
    const digest = createHash("sha256").update(manifest).digest("hex");
    if (ctx.execution === null) return { files: lines.length, bytes, digest, manifest };
    try {
      const written = await ctx.artifacts.write(MANIFEST_NAME, manifest);
      ctx.progress.log(`Wrote ${written.name} (${written.bytes} bytes)`);
      return { files: lines.length, bytes, digest, manifest_artifact: written.name };
    } catch (error) {
      // A read-only checkout (or a full disk) keeps no artifact: the digest is still the answer.
      if (!(error instanceof CapabilityError) || error.code !== "artifacts_unavailable") throw error;
      ctx.progress.log(`${error.message} The manifest is in the output instead.`, "warn");
      return { files: lines.length, bytes, digest, manifest };
    }
  },
});

/** A path the client named that is not there is the client's mistake (not_found, 404), not a bug. */
async function mustExist(abs: string, given: string): Promise<void> {
  try {
    await stat(abs);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException)?.code;
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    throw new CapabilityError("not_found", `input.path ${JSON.stringify(given)} does not exist in the checkout; give a folder or file relative to the checkout root, like "src" or "."`, {
      context: { field: "path", path: given },
      suggestion: "List the checkout's folders, or leave path out to digest the whole checkout.",
    });
  }
}

interface ListedFile {
  abs: string;
  /** Relative to the checkout root, `/`-separated: what the manifest names. */
  rel: string;
}

interface Filters {
  include: ((path: string) => boolean) | null;
  exclude: (path: string) => boolean;
}

/** Every file under `base` that the filters keep, sorted by path (code unit order, as `sort` does). */
async function listFiles(base: string, realRoot: string, ctx: CapabilityContext, filters: Filters): Promise<ListedFile[]> {
  const root = ctx.root;
  const out: ListedFile[] = [];
  const info = await stat(base);
  if (!info.isDirectory()) {
    // A FIFO or a device given as the path is refused here, before anything waits on it.
    if (!info.isFile()) await (await openRegularFile(base, { label: `input.path ${JSON.stringify(toPosix(relative(root, base)))}` })).close();
    return [{ abs: base, rel: toPosix(relative(root, base)) }];
  }
  const pending = [base];
  while (pending.length > 0) {
    if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
    const dir = pending.pop()!;
    const entries = await readFolderInside(dir, realRoot, dir !== base);
    if (entries === null) {
      const rel = toPosix(relative(root, dir));
      ctx.progress.diagnostic({ severity: "warning", code: "folder_changed", file: rel, message: `Skipped ${rel}: it changed while it was walked (a symbolic link leading outside the checkout put in its place?)` });
      continue;
    }
    for (const entry of entries) {
      // A large folder read through long globs takes a while: a cancel is seen between entries.
      if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
      const abs = join(dir, entry.name);
      const fromBase = toPosix(relative(base, abs));
      if (filters.exclude(fromBase)) continue;
      // A name that is not UTF-8, listed with U+FFFD for its bad bytes, opens nothing — a folder's
      // walk threw, a link was called broken: listed, so that the hashing says what it is (checking tester, session 48).
      if (entry.name.includes("\uFFFD") && !(await lstat(abs).then(() => true, () => false))) {
        if (filters.include === null || filters.include(fromBase)) out.push({ abs, rel: toPosix(relative(root, abs)) });
        continue;
      }
      if (entry.isDirectory()) pending.push(abs);
      else if (entry.isFile() || (entry.isSymbolicLink() && (await linkedFileInside(abs, realRoot, ctx)))) {
        if (filters.include === null || filters.include(fromBase)) out.push({ abs, rel: toPosix(relative(root, abs)) });
      }
    }
  }
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

/**
 * The entries of a folder the walk met, read only when the folder read is inside the checkout: a
 * folder listed and then replaced by a link leading out was walked through the link, and the names
 * outside appeared in the diagnostics (checking tester, session 50). On Linux the folder is opened
 * (not through a link, but for the walk's own base, which may be one inside) and read through its
 * descriptor, whose real path is checked; elsewhere it must be the same folder before and after
 * the read. Null when it is not.
 */
async function readFolderInside(dir: string, realRoot: string, noLink: boolean): Promise<Dirent[] | null> {
  const inside = (path: string) => path === realRoot || path.startsWith(realRoot + sep);
  if (process.platform === "linux") {
    let handle;
    try {
      handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY | (noLink ? constants.O_NOFOLLOW : 0));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ELOOP" || code === "ENOTDIR" || code === "ENOENT") return null;
      throw error;
    }
    try {
      const descriptor = `/proc/self/fd/${handle.fd}`;
      const where = await readlink(descriptor).catch(() => null);
      if (where !== null) return inside(where) ? await readdir(descriptor, { withFileTypes: true }) : null;
    } finally {
      await handle.close();
    }
  }
  const before = await lstat(dir).catch(() => null);
  if (before === null || !(before.isDirectory() || (!noLink && before.isSymbolicLink()))) return null;
  const entries = await readdir(dir, { withFileTypes: true });
  const after = await lstat(dir).catch(() => null);
  const real = await realpath(dir).catch(() => null);
  return after !== null && after.ino === before.ino && after.dev === before.dev && real !== null && inside(real) ? entries : null;
}

/** A symbolic link is digested when it leads to a file inside the checkout; links to folders are not walked (no cycles). */
async function linkedFileInside(abs: string, realRoot: string, ctx: CapabilityContext): Promise<boolean> {
  const rel = toPosix(relative(ctx.root, abs));
  try {
    const target = await realpath(abs);
    const inside = target === realRoot || target.startsWith(realRoot + sep);
    if (!inside) {
      ctx.progress.diagnostic({ severity: "warning", code: "link_outside", file: rel, message: `Skipped ${rel}: a symbolic link leading outside the checkout` });
      return false;
    }
    return (await stat(target)).isFile();
  } catch {
    ctx.progress.diagnostic({ severity: "warning", code: "broken_link", file: rel, message: `Skipped ${rel}: a broken symbolic link` });
    return false;
  }
}

/** One `sha256sum` line; a name with `\`, CR or LF is escaped and the line marked with `\`, as GNU coreutils does. */
function manifestLine(hex: string, name: string): string {
  if (!/[\\\n\r]/.test(name)) return `${hex}  ${name}\n`;
  const escaped = name.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r");
  return `\\${hex}  ${escaped}\n`;
}

function toPosix(path: string): string {
  return sep === "/" ? path : path.split(sep).join("/");
}

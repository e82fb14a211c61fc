import { createHash, randomUUID } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { lstat, mkdir, open, rename, statfs, unlink, writeFile } from "node:fs/promises";
import { basename, dirname, join, sep } from "node:path";
import { PARTIAL_ARTIFACT_PREFIX } from "../execution/artifact-files.ts";
import { formatBytes } from "../execution/storage-gate.ts";
import { CapabilityError } from "../capability/capability-error.ts";
import type { ArtifactWriter } from "../capability/declaration.ts";
import type { WorkerTask } from "./task.ts";

/** The bytes of a name a file system accepts in one segment. */
const MAX_NAME_BYTES = 255;

// The bytes go into a new file of a name of docket's own (O_EXCL: never one that exists, nor a
// symlink or a FIFO planted there), which is renamed to the artifact's name once whole.
const OPEN_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

/**
 * Checks an artifact name: one path segment, no traversal, nothing a file system or a download
 * would misread. A refusal quotes the name with `mask` applied first: JSON-quoted, a control
 * character inside a secret becomes escape text (`\u0007`) that no mask finds any more.
 */
export function checkArtifactName(name: unknown, mask: (text: string) => string = (text) => text): string {
  const bad = (why: string): never => {
    const shown = typeof name === "string" ? mask(name) : String(name);
    throw new CapabilityError("invalid_input", `Cannot write artifact ${JSON.stringify(shown)}: ${why}.`, {
      context: { name: shown.slice(0, 300) },
      suggestion: 'Use a plain file name such as "report.json".',
    });
  };
  if (typeof name !== "string") return bad("the name must be a string");
  if (name === "" || name === "." || name === "..") return bad("the name must be a file name, not empty, \".\" or \"..\"");
  if (name.includes("/") || name.includes("\\")) return bad("the name must be a single path segment, without / or \\");
  // C1 too (U+0080–U+009F): an 8-bit escape (`\u009b31m`) is one to a terminal that shows the name.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return bad("the name must not contain NUL or control characters");
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return bad(`the name must be at most ${MAX_NAME_BYTES} bytes`);
  if (name.startsWith(PARTIAL_ARTIFACT_PREFIX)) return bad(`names beginning with ${PARTIAL_ARTIFACT_PREFIX} are docket's own (an artifact being written)`);
  return name;
}

/**
 * `ctx.artifacts` for one task: writes into the execution's managed folder (docs/handler-api.md), refuses
 * symlinks, and enforces the files / bytes / total bytes limits of the task.
 */
export function createArtifactWriter(task: Pick<WorkerTask, "artifacts_dir" | "artifact_limits">, mask: (text: string) => string = (text) => text): ArtifactWriter {
  const dir = task.artifacts_dir;
  const limits = task.artifact_limits;
  // Bytes per name, reserved synchronously before any await, so concurrent writes cannot overshoot.
  const written = new Map<string, number>();
  let total = 0;
  let folderReady: Promise<void> | null = null;

  return {
    async write(name, data) {
      const checked = checkArtifactName(name, mask);
      // Names are listed to every client as they are (executions.artifacts, the cockpit): one that
      // holds a sensitive value of the input would show it, so it is refused, and never quoted.
      if (mask(checked) !== checked) {
        throw new CapabilityError("invalid_input", `Cannot write artifact ${JSON.stringify(mask(checked))}: its name holds a sensitive value of the input, and artifact names are shown to every client.`, {
          context: { name: mask(checked) },
          suggestion: "Name the artifact without the secret (a fixed name, or a hash of the value).",
        });
      }
      if (dir === null) {
        throw new CapabilityError("artifacts_unavailable", `Cannot write artifact "${checked}": a direct call has no artifact folder; artifacts exist only in an execution.`, {
          context: { name: checked },
          suggestion: "Start the capability as an execution (executions.start or docket run) to keep its artifacts.",
        });
      }
      const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
      if (!(bytes instanceof Uint8Array)) {
        throw new CapabilityError("invalid_input", `Cannot write artifact "${checked}": data must be a string or a Uint8Array.`, { context: { name: checked } });
      }
      const previous = written.get(checked);
      reserve(checked, bytes.byteLength, previous);
      try {
        // One preparation for all writes; a failed one is forgotten so that the next write retries.
        folderReady ??= prepareFolder(dir).catch((error) => {
          folderReady = null;
          throw error;
        });
        await folderReady;
        if (limits.disk_free_floor > 0) await keepFloor(dir, checked, bytes.byteLength, limits.disk_free_floor);
        await writeRegularFile(dir, checked, bytes).catch((error) => {
          throw unavailable(error, join(dir, checked), "cannot be written");
        });
      } catch (error) {
        // Give the reservation back: a refused or failed write does not count against the limits.
        total -= bytes.byteLength - (previous ?? 0);
        if (previous === undefined) written.delete(checked);
        else written.set(checked, previous);
        throw error;
      }
      return { name: checked, bytes: bytes.byteLength, sha256: createHash("sha256").update(bytes).digest("hex") };
    },
  };

  function reserve(name: string, size: number, previous: number | undefined): void {
    const limitError = (what: string, context: Record<string, unknown>) =>
      new CapabilityError("artifact_limit", `Cannot write artifact "${name}": ${what}.`, {
        context: { name, ...context },
        suggestion: "Write fewer or smaller artifacts, or raise the artifact limits (--artifact-bytes, --artifacts-per-execution, --artifacts-total-bytes).",
      });
    if (size > limits.bytes) throw limitError(`${size} bytes is more than the ${limits.bytes} bytes allowed for one artifact`, { bytes: size, limit: limits.bytes });
    if (previous === undefined && written.size >= limits.files) throw limitError(`this execution already has ${written.size} artifacts, the most allowed`, { files: written.size, limit: limits.files });
    const next = total - (previous ?? 0) + size;
    if (next > limits.total_bytes) throw limitError(`it would bring this execution's artifacts to ${next} bytes, more than the ${limits.total_bytes} allowed`, { total_bytes: next, limit: limits.total_bytes });
    written.set(name, size);
    total = next;
  }
}

/**
 * Refuses a write that would leave the disk holding `dir` with less than `floor` bytes free: the
 * store keeps that space for writing executions' events (disk_free_floor_bytes), and an artifact
 * filling it would make every start and event fail to be written. A disk that cannot say how
 * much is free is not held to it.
 */
async function keepFloor(dir: string, name: string, size: number, floor: number): Promise<void> {
  let free: number;
  try {
    const { bavail, bsize } = await statfs(dir);
    free = Number(bavail) * Number(bsize);
  } catch {
    return;
  }
  if (free - size >= floor) return;
  throw new CapabilityError("artifact_limit", `Cannot write artifact "${name}" (${formatBytes(size)}): the disk holding .docket/ has ${formatBytes(free)} free, and must keep ${formatBytes(floor)} free for the store (disk_free_floor_bytes).`, {
    context: { name, reason: "disk_low", bytes: size, free_bytes: free, floor_bytes: floor },
    suggestion: "Free disk space on the checkout's disk, or write a smaller artifact. The execution's events are still kept.",
  });
}

/** Why a folder cannot be made that no handler can do anything about: the checkout's, or the disk's. */
const UNWRITABLE: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "not permitted",
  EROFS: "a read-only file system",
  ENOSPC: "no space left on the device",
  EDQUOT: "the disk quota is used up",
  ENOTDIR: "a file stands where a folder should be",
  EEXIST: "a file stands where a folder should be",
};

/**
 * An error the checkout or its disk caused, as artifacts_unavailable naming `path` from the
 * checkout's `.docket/` on (clients see failures; the server's own paths are not theirs to see);
 * any other as it is.
 */
function unavailable(error: unknown, path: string, what: string): unknown {
  const code = (error as NodeJS.ErrnoException)?.code ?? "";
  if (!(code in UNWRITABLE)) return error;
  const at = path.lastIndexOf(`${sep}.docket`);
  const shown = at >= 0 ? path.slice(at + 1) : path;
  // Not "a bug in the capability": the checkout (or its disk) does not take files here.
  return new CapabilityError("artifacts_unavailable", `Cannot write artifacts: ${shown} ${what} (${code}: ${UNWRITABLE[code]}).`, {
    context: { path: shown, code },
    suggestion: "Run docket where the checkout's .docket/ folder can be written (or make it writable), or free disk space.",
  });
}

async function prepareFolder(dir: string): Promise<void> {
  // A link planted at .docket/ or .docket/artifacts/ would take every later execution's artifacts
  // outside the checkout, where no listing or release finds them: refused before anything is made
  // through it, and the whole way checked again once the folder exists.
  const folders = [dirname(dirname(dir)), dirname(dir), dir];
  await refuseLinks(folders, dir, true);
  // 0700: artifacts can hold what a handler read from the checkout; nobody else needs to read them.
  let firstCreated: string | undefined;
  try {
    firstCreated = await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw unavailable(error, (error as NodeJS.ErrnoException).path ?? dir, "cannot be created");
  }
  // If this write is what brought `.docket/` into being, it gets the `.gitignore` it must always have.
  if (firstCreated !== undefined && basename(firstCreated) === ".docket") {
    await writeFile(join(firstCreated, ".gitignore"), "*\n", { flag: "wx" }).catch(() => {});
  }
  await refuseLinks(folders, dir, false);
}

/** Refuses a folder on the way that is a link or not a folder; `beforeMaking`, only a link, and one not there yet is fine. */
async function refuseLinks(folders: string[], dir: string, beforeMaking: boolean): Promise<void> {
  for (const folder of folders) {
    const info = await lstat(folder).catch((error: NodeJS.ErrnoException) => {
      if (beforeMaking && (error.code === "ENOENT" || error.code === "ENOTDIR")) return null;
      throw error;
    });
    // Before anything is made only a link is refused here: a file in the way fails the mkdir, which says so.
    if (info !== null && (beforeMaking ? info.isSymbolicLink() : !info.isDirectory())) {
      throw new CapabilityError("artifact_refused", `Cannot write artifacts: ${folder === dir ? "the execution's artifact folder" : basename(folder) === ".docket" ? "the checkout's .docket folder" : ".docket/artifacts"} is a symlink or not a folder.`, {
        suggestion: "Remove the link that stands in .docket/ (docket makes its folders itself) and run again.",
      });
    }
  }
}

/**
 * Writes `name` in `dir` whole or not at all: into a file of docket's own first, renamed to the
 * name once every byte is written. A write cut short (a full disk, a crash) leaves no artifact
 * listed with the bytes it never had, and an artifact written before under that name stays as
 * it was.
 */
async function writeRegularFile(dir: string, name: string, bytes: Uint8Array): Promise<void> {
  const refused = (what: string) =>
    new CapabilityError("artifact_refused", `Cannot write artifact "${name}": ${what}; artifacts are written only as regular files.`, { context: { name } });
  const path = join(dir, name);
  const standing = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
  if (standing?.isSymbolicLink()) throw refused("a symlink stands at that name");
  if (standing && !standing.isFile()) throw refused("something other than a file stands at that name");
  const partial = join(dir, `${PARTIAL_ARTIFACT_PREFIX}${randomUUID()}`);
  try {
    const file = await open(partial, OPEN_FLAGS, 0o600);
    try {
      await file.writeFile(bytes);
    } finally {
      await file.close();
    }
    // A rename replaces what stands at the name, a symlink planted since included, never its target.
    await rename(partial, path);
  } catch (error) {
    await unlink(partial).catch(() => {});
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EISDIR" || code === "ENOTEMPTY") throw refused("something other than a file stands at that name");
    throw error;
  }
}

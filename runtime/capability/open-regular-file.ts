import { constants, type Stats } from "node:fs";
import { open, realpath, stat } from "node:fs/promises";
import { CapabilityError } from "./capability-error.ts";
import { isWithin } from "./resolve-inside.ts";

/**
 * A regular file open for reading. Its own small shape rather than Node's FileHandle, so that the
 * public API's declarations need no Node types in a checkout (docs/editor-types.md).
 */
export interface RegularFile {
  /** The rest of the file, as UTF-8 text. */
  readText(): Promise<string>;
  /** The rest of the file in pieces of at most `size` bytes (default 1 MiB). */
  chunks(size?: number): AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}

/** Options of `openRegularFile`. */
export interface OpenRegularFileOptions {
  /** What the path is, for the error message (`input.path`, `manifest.sha256`). */
  label?: string;
  /**
   * A folder the file opened must be inside (`ctx.root`): checked on the open descriptor, so a
   * path that `resolveInside` passed and that a symbolic link leading out replaced before the
   * open is refused, not read (a file outside the checkout was hashed and its digest returned:
   * foundation tester, session 50).
   */
  inside?: string;
}

/**
 * Opens a file for reading only when it is a regular file. A FIFO, a device or a socket is
 * refused with `CapabilityError("invalid_input")` naming the path and what it is: reading one can
 * block for ever (a FIFO with no writer, a terminal) or never end (/dev/zero), and no thread
 * blocked in a system call can be stopped, not even by terminating its worker (docs/containment.md).
 *
 * The file is opened non-blocking and checked on the open descriptor, so nothing can swap it
 * between the check and the read, and opening a FIFO with no writer returns at once instead of
 * waiting for one. For a regular file the flag changes nothing.
 */
export async function openRegularFile(path: string, options: OpenRegularFileOptions = {}): Promise<RegularFile> {
  // O_NONBLOCK is not defined on Windows, where opening does not block on these files anyway.
  const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  let info: Stats;
  try {
    info = await handle.stat();
  } catch (error) {
    await handle.close();
    throw error;
  }
  if (info.isFile() && options.inside !== undefined) {
    try {
      await mustBeInside(path, info, options.inside, options.label ?? path);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }
  if (info.isFile()) {
    return {
      readText: () => handle.readFile("utf8"),
      async *chunks(size = 1 << 20) {
        for (;;) {
          // A fresh buffer per piece: a caller may keep a piece past the next read.
          const buffer = Buffer.allocUnsafe(size);
          const { bytesRead } = await handle.read(buffer, 0, size, null);
          if (bytesRead === 0) return;
          yield buffer.subarray(0, bytesRead);
        }
      },
      close: () => handle.close(),
    };
  }
  await handle.close();
  const label = options.label ?? path;
  throw new CapabilityError("invalid_input", `${label} is ${kindOf(info)}, not a regular file; only regular files are read, since reading this could block or never end`, {
    context: { kind: kindName(info) },
    suggestion: "Give the path of a regular file (or a folder), or leave this one out.",
  });
}

/**
 * Refuses an opened file unless it is the file `path` names now, and that lies inside `folder`:
 * the same device and inode as the real path, which is within the folder's real path. Whatever a
 * link swapped in before the open, the descriptor's file is then one the checkout holds.
 */
async function mustBeInside(path: string, opened: Stats, folder: string, label: string): Promise<void> {
  let named: Stats | null = null;
  let real: string | null = null;
  try {
    real = await realpath(path);
    named = await stat(real);
  } catch {
    // Gone or changed meanwhile: not the file that was opened, as below.
  }
  const refuse = (why: string) =>
    new CapabilityError("invalid_input", `${label} ${why}; it was not read`, {
      context: { path: label },
      suggestion: "Give a path inside the checkout, and leave it alone while docket reads it.",
    });
  if (real !== null && !isWithin(await realpath(folder), real)) throw refuse("leads outside the checkout through a symbolic link");
  if (named === null || named.dev !== opened.dev || named.ino !== opened.ino) throw refuse("changed while it was opened (replaced, or a symbolic link put in its place)");
}

/** The whole text of a regular file (openRegularFile), closed after. */
export async function readRegularFileText(path: string, options: OpenRegularFileOptions = {}): Promise<string> {
  const opened = await openRegularFile(path, options);
  try {
    return await opened.readText();
  } finally {
    await opened.close();
  }
}

/** What a non-regular file is, with its article, for a message. */
function kindOf(info: Stats): string {
  const name = kindName(info);
  return name === "folder" ? "a folder" : `a ${name}`;
}

function kindName(info: Stats): string {
  if (info.isDirectory()) return "folder";
  if (info.isFIFO()) return "FIFO (named pipe)";
  if (info.isCharacterDevice()) return "character device";
  if (info.isBlockDevice()) return "block device";
  if (info.isSocket()) return "socket";
  return "special file";
}

import { createHash } from "node:crypto";
import type { ProgressReporter } from "./declaration.ts";
import { openRegularFile } from "./open-regular-file.ts";

/** Options of `sha256File`. */
export interface Sha256FileOptions {
  /** How a refusal names the file (`data/pipe`); default the path given. */
  label?: string;
  /** A folder the file read must be inside (`ctx.root`), checked on the open file (openRegularFile's `inside`). */
  inside?: string;
}

/**
 * SHA-256 of a file, streamed so a large file never sits in memory. Given a handler's progress
 * reporter, it stops between chunks when cancellation is requested (throwing its cancellation).
 * Anything but a regular file (a FIFO, a device) is refused before a byte is read (openRegularFile).
 */
export async function sha256File(path: string, progress?: Pick<ProgressReporter, "cancelled" | "cancellation">, options: Sha256FileOptions = {}): Promise<{ hex: string; bytes: number }> {
  const hash = createHash("sha256");
  let bytes = 0;
  const file = await openRegularFile(path, { label: options.label, inside: options.inside });
  try {
    for await (const chunk of file.chunks()) {
      if (progress?.cancelled()) throw progress.cancellation();
      hash.update(chunk);
      bytes += chunk.length;
    }
  } finally {
    await file.close().catch(() => undefined);
  }
  return { hex: hash.digest("hex"), bytes };
}

import { createHash } from "node:crypto";
import type { ProgressReporter } from "./declaration.ts";
import { openRegularFile } from "./open-regular-file.ts";

/**
 * SHA-256 of a file, streamed so a large file never sits in memory. Given a handler's progress
 * reporter, it stops between chunks when cancellation is requested (throwing its cancellation).
 * Anything but a regular file (a FIFO, a device) is refused before a byte is read (openRegularFile).
 */
export async function sha256File(path: string, progress?: Pick<ProgressReporter, "cancelled" | "cancellation">): Promise<{ hex: string; bytes: number }> {
  const hash = createHash("sha256");
  let bytes = 0;
  const handle = await openRegularFile(path);
  const stream = handle.createReadStream({ highWaterMark: 1 << 20 });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (progress?.cancelled()) throw progress.cancellation();
      hash.update(chunk);
      bytes += chunk.length;
    }
  } finally {
    stream.destroy();
    await handle.close().catch(() => undefined);
  }
  return { hex: hash.digest("hex"), bytes };
}

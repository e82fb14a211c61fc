import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import type { ProgressReporter } from "./declaration.ts";

/**
 * SHA-256 of a file, streamed so a large file never sits in memory. Given a handler's progress
 * reporter, it stops between chunks when cancellation is requested (throwing its cancellation).
 */
export async function sha256File(path: string, progress?: Pick<ProgressReporter, "cancelled" | "cancellation">): Promise<{ hex: string; bytes: number }> {
  const hash = createHash("sha256");
  let bytes = 0;
  const stream = createReadStream(path, { highWaterMark: 1 << 20 });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (progress?.cancelled()) throw progress.cancellation();
      hash.update(chunk);
      bytes += chunk.length;
    }
  } finally {
    stream.destroy();
  }
  return { hex: hash.digest("hex"), bytes };
}

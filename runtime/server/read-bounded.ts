/**
 * Reads a body of at most `limit` bytes, checking while reading (a sender may lie about
 * Content-Length or send none; a pipe may never end); null when it is larger, and nothing past the
 * limit is read: leaving the loop cancels the stream. An absent body is empty. Text chunks (a Node
 * stream with an encoding) count by their UTF-8 bytes.
 */
export async function readBounded(body: AsyncIterable<Uint8Array | string> | null, limit: number): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    total += bytes.byteLength;
    if (total > limit) return null;
    chunks.push(bytes);
  }
  return Buffer.concat(chunks);
}

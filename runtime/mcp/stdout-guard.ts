import { Writable } from "node:stream";

/**
 * Keeps stdout for protocol messages alone (MCP over stdio): returns the only writer left to it,
 * and sends everything else written there to stderr: `console.log` of this thread (which Bun
 * writes to the file descriptor directly) and a worker's output (which reaches the parent through
 * `process.stdout.write`). A capability that prints can then never corrupt the protocol.
 */
export function claimStdout(): Writable {
  const write = process.stdout.write.bind(process.stdout);
  const protocol = new Writable({
    write(chunk, _encoding, callback) {
      write(chunk, (error) => callback(error ?? null));
    },
  });
  process.stdout.write = ((...args: Parameters<typeof process.stderr.write>) => process.stderr.write(...args)) as typeof process.stdout.write;
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  return protocol;
}

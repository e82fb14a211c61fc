import { format, inspect } from "node:util";

/**
 * Sends this thread's console through `process.stdout.write` and `process.stderr.write`, which the
 * CLI routes through writers that never wait (fd-writer.ts). Bun's console on the main thread
 * writes to the descriptor itself, and waits: a capability file's top level that printed 300 KB
 * while the server imported it, to a stderr pipe nobody read, held the server's main thread — every
 * client, and its stop signals — for good (a tester). Call it before any capability file is
 * imported on this thread (docket serve, docket mcp).
 */
export function routeConsole(): void {
  const out = (...args: unknown[]) => void process.stdout.write(`${format(...args)}\n`);
  const err = (...args: unknown[]) => void process.stderr.write(`${format(...args)}\n`);
  console.log = out;
  console.info = out;
  console.debug = out;
  console.warn = err;
  console.error = err;
  console.trace = (...args: unknown[]) => err(`Trace: ${format(...args)}\n${(new Error().stack ?? "").split("\n").slice(2).join("\n")}`);
  console.dir = (value: unknown, options?: object) => out(inspect(value, options));
}

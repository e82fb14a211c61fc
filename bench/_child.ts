// A bench helper in its own process (a reader, so it does not share the server's thread, or a peer
// server on Node): its stdout lines one at a time, a line to its stdin, and a kill by its pid.
import { spawn } from "node:child_process";

/** A running helper process. */
export interface BenchChild {
  /** The next line it printed; throws if it exited first. */
  next(): Promise<string>;
  send(line: string): void;
  stop(): void;
}

/** Starts `command args…`; stderr goes to the bench's own, so a helper's crash is seen. */
export function startChild(command: string, args: string[]): BenchChild {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
  const lines: string[] = [];
  let wake: (() => void) | null = null;
  let rest = "";
  let exited = false;
  child.stdout!.on("data", (chunk) => {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop()!;
    lines.push(...parts.filter(Boolean));
    wake?.();
  });
  child.once("exit", () => ((exited = true), wake?.()));
  return {
    async next() {
      while (lines.length === 0) {
        if (exited) throw new Error(`the bench helper ${args.join(" ")} exited early`);
        await new Promise<void>((r) => (wake = r));
      }
      return lines.shift()!;
    },
    send: (line) => void child.stdin!.write(`${line}\n`),
    stop: () => void (exited || child.kill("SIGKILL")),
  };
}

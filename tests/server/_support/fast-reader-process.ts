import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const READER = fileURLToPath(new URL("./fast-reader.ts", import.meta.url));

/** Runs fast-reader.ts in a child `bun`; `next()` resolves with each line it prints; `stop()` kills it by pid. */
export function startFastReader(url: string, token?: string) {
  const child = spawn(process.execPath, [READER, url, ...(token ? [token] : [])], { stdio: ["ignore", "pipe", "inherit"] });
  const lines: string[] = [];
  let wake: (() => void) | null = null;
  let buffered = "";
  child.stdout.on("data", (chunk) => {
    buffered += chunk;
    const parts = buffered.split("\n");
    buffered = parts.pop()!;
    lines.push(...parts.filter(Boolean));
    wake?.();
  });
  let exited = false;
  child.once("exit", () => {
    exited = true;
    wake?.();
  });
  return {
    async next(): Promise<string> {
      while (lines.length === 0) {
        if (exited) throw new Error("the fast reader exited before printing what was awaited");
        await new Promise<void>((resolve) => (wake = resolve));
      }
      return lines.shift()!;
    },
    stop: () => void child.kill("SIGKILL"),
  };
}

// A private redis-server for the BullMQ rows: Debian's `redis-server` on 127.0.0.1, a free port,
// a temporary folder, no persistence. Benchmarks skip their BullMQ rows (with a note saying why)
// when it is not installed: `apt-get install redis-server` puts it on PATH.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A running redis-server the caller stops. */
export interface PrivateRedis {
  host: string;
  port: number;
  /** Bytes Redis reports in use (`INFO memory` used_memory). */
  usedMemory(): Promise<number>;
  stop(): Promise<void>;
}

/** Why a BullMQ row cannot run here, or null when redis-server is installed. */
export function redisMissing(): string | null {
  const found = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  return found.status === 0 ? null : "redis-server is not installed (Debian: apt-get install redis-server); BullMQ rows skipped";
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** One command in RESP, its bulk-string answer as text (enough for INFO and PING). */
async function command(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    const timer = setTimeout(() => (socket.destroy(), reject(new Error(`redis ${args[0]} timed out`))), 5000);
    socket.on("error", (error) => (clearTimeout(timer), reject(error)));
    socket.on("data", (chunk) => {
      answer += chunk;
      // "+PONG\r\n", or "$<n>\r\n<n bytes>\r\n".
      const bulk = /^\$(\d+)\r\n/.exec(answer);
      if (answer.startsWith("+") || answer.startsWith("-") || (bulk && answer.length >= bulk[0].length + Number(bulk[1]) + 2)) {
        clearTimeout(timer);
        socket.end();
        resolve(bulk ? answer.slice(bulk[0].length, bulk[0].length + Number(bulk[1])) : answer.trim());
      }
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`);
  });
}

/** Starts redis-server on loopback; waits (bounded) until it answers PING. */
export async function startRedis(): Promise<PrivateRedis> {
  const missing = redisMissing();
  if (missing) throw new Error(missing);
  const dir = mkdtempSync(join(tmpdir(), "docket-bench-redis-"));
  const port = await freePort();
  // No RDB, no AOF: the bench measures a queue in memory, as docket's memory store is.
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"], {
    stdio: "ignore",
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await command(port, "PING")) === "+PONG") break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`redis-server did not answer on 127.0.0.1:${port}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    host: "127.0.0.1",
    port,
    async usedMemory() {
      const info = await command(port, "INFO", "memory");
      const used = /used_memory:(\d+)/.exec(info);
      if (!used) throw new Error("INFO memory had no used_memory");
      return Number(used[1]);
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

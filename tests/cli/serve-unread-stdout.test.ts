// A server whose stdout (where handlers of direct calls print) is a pipe nobody reads holds a
// bounded backlog of it, not all of it (containment tester, session 45: 3 GB held, then kept).
import { afterAll, expect, test } from "bun:test";
import { closeSync, constants, existsSync, openSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import { cleanEnv, fromSource, removeTempDirs, tempCheckout, tempDir, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

/** Prints `mb` lines of 1 MiB with console.log, yielding now and then. */
const PRINT = `import { capability } from "docket";
import * as v from "valibot";
export default capability({ id: "t.print", title: "Print", description: "Prints lines of 1 MiB.", effect: "read", input: v.object({ mb: v.number(), mark: v.string() }), output: v.object({ n: v.number() }),
  async handler({ mb, mark }) {
    const line = mark.repeat(1 << 20);
    for (let i = 0; i < mb; i++) {
      console.log(line);
      if (i % 16 === 15) await Bun.sleep(0);
    }
    return { n: mb };
  } });
`;

/** The resident size of `pid` in MiB (Linux). */
function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

test.skipIf(process.platform !== "linux")("what handlers print to a server's stdout that nobody reads is held up to 64 MiB; past that it is dropped, and said where it was once the reader takes what waited", async () => {
  const checkout = tempCheckout();
  writeFiles(checkout, { "capabilities/t.print.ts": PRINT });
  const fifo = join(tempDir("fifo"), "stdout");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  // Held open for reading and never read until the end: the pipe fills at 64 KiB and stays full.
  const holder = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const stdout = openSync(fifo, "w");
  const server = Bun.spawn([...fromSource.argv(), "serve", "--store", "memory", "--port", "0"], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout, stderr: "ignore" });
  closeSync(stdout);
  try {
    const lease = join(checkout, ".docket", "lease.json");
    for (let i = 0; i < 300 && !existsSync(lease); i++) await Bun.sleep(50);
    const url = JSON.parse(readFileSync(lease, "utf8")).url as string;
    const call = (mb: number, mark: string) => fetch(`${url}/api/v1/t/print`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ mb, mark }) });
    const before = rssMb(server.pid);
    // 640 MiB printed: held whole, the server grew by as much.
    expect(await (await call(640, "b")).json()).toEqual({ n: 640 });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(rssMb(server.pid) - before).toBeLessThan(400);
    // The reader comes back: it gets what waited, then the note of what was dropped with the next line printed.
    const seen: string[] = [];
    const buffer = Buffer.alloc(1 << 20);
    const drain = () => {
      for (;;) {
        let read = 0;
        try {
          read = readSync(holder, buffer, 0, buffer.length, null);
        } catch {
          return;
        }
        if (read === 0) return;
        // The runs of one letter are kept short: 64 MiB of "b" need not be.
        seen.push(buffer.subarray(0, read).toString("latin1").replace(/([bc])\1+/g, "$1"));
      }
    };
    for (let i = 0, quiet = 0; i < 4000 && quiet < 100; i++) {
      const had = seen.length;
      drain();
      quiet = seen.length === had ? quiet + 1 : 0;
      await Bun.sleep(5);
    }
    expect(await (await call(1, "c")).json()).toEqual({ n: 1 });
    for (let i = 0; i < 2000 && !seen.join("").includes("c\n"); i++) {
      drain();
      await Bun.sleep(5);
    }
    const text = seen.join("");
    const note = /\[docket\] (\d+) bytes of stdout were dropped here: its reader fell more than 64 MiB behind\./.exec(text);
    expect(note).not.toBeNull();
    expect(Number(note![1])).toBeGreaterThan(500 * 1024 * 1024);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  } finally {
    server.kill("SIGKILL");
    await server.exited;
    closeSync(holder);
  }
}, 120_000);

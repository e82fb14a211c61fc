// A pipe docket writes to is left in the mode it found it in (runtime/adapter/bun-stdio-blocking.ts):
// Bun makes it non-blocking once process.stdout is used, and the next program of a CI step's shell,
// which shares it, then failed its large writes with EAGAIN.
import { afterAll, expect, test } from "bun:test";
import { closeSync, constants, existsSync, openSync, readFileSync, readSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cleanEnv, fromSource, removeTempDirs, tempCheckout, tempDir, writeFiles } from "./_harness.ts";
import { ECHO } from "./_fixtures.ts";

afterAll(removeTempDirs);

/** Whether the open file description behind `fd` (of this process) is non-blocking (Linux: /proc/self/fdinfo). */
function nonBlocking(fd: number): boolean {
  const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))![1]!;
  return (parseInt(flags, 8) & 0o4000) !== 0;
}

test.skipIf(!existsSync("/proc/self/fdinfo"))("docket leaves the pipe it wrote its stdout and stderr to blocking, as it found it, whatever the command", async () => {
  const checkout = tempCheckout();
  const user = tempDir("user");
  writeFiles(user, { "demo.echo.ts": ECHO });
  const fifo = join(tempDir("fifo"), "out");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  // Both ends held here, as a shell holds the pipe of a CI step: the writing end is the one docket inherits.
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY);
  try {
    for (const args of [["--version"], ["capabilities", "list"], ["run", join(user, "demo.echo.ts"), "--input", '{"message":"hi"}']]) {
      expect({ args, nonBlocking: nonBlocking(writer) }).toEqual({ args, nonBlocking: false });
      const child = Bun.spawn([...fromSource.argv(), ...args], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout: writer, stderr: writer });
      const code = await child.exited;
      // Drained, so that no run waits on a full pipe.
      const chunk = Buffer.alloc(1 << 16);
      try {
        while (readSync(reader, chunk) > 0);
      } catch {
        // EAGAIN: nothing more to read.
      }
      expect({ args, code, nonBlocking: nonBlocking(writer) }).toEqual({ args, code: 0, nonBlocking: false });
    }
  } finally {
    closeSync(writer);
    closeSync(reader);
  }
});

test.skipIf(!existsSync("/proc/self/fdinfo"))("docket ended by a signal no handler of its own takes (SIGTERM while it waits for --input -) leaves its pipes blocking too", async () => {
  const checkout = tempCheckout();
  const user = tempDir("user");
  writeFiles(user, { "demo.echo.ts": ECHO });
  const dir = tempDir("fifo");
  const [out, input] = [join(dir, "out"), join(dir, "in")];
  for (const fifo of [out, input]) expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  const reader = openSync(out, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(out, constants.O_WRONLY);
  // Its input never comes: the writing end stays open here, empty.
  const stdin = openSync(input, constants.O_RDONLY | constants.O_NONBLOCK);
  const feeder = openSync(input, constants.O_WRONLY);
  try {
    const child = Bun.spawn([...fromSource.argv(), "run", join(user, "demo.echo.ts"), "--input", "-"], { cwd: checkout, env: cleanEnv(), stdin, stdout: writer, stderr: writer });
    let said = "";
    const chunk = Buffer.alloc(1 << 16);
    for (const until = Date.now() + 20_000; !said.includes("waiting for --input -") && Date.now() < until; await Bun.sleep(20)) {
      try {
        const n = readSync(reader, chunk);
        said += chunk.subarray(0, n).toString();
      } catch {
        // EAGAIN: nothing yet.
      }
    }
    expect(said).toContain("waiting for --input -");
    child.kill("SIGTERM");
    await child.exited;
    expect({ signal: child.signalCode, nonBlocking: nonBlocking(writer) }).toEqual({ signal: "SIGTERM", nonBlocking: false });
  } finally {
    for (const fd of [writer, reader, feeder, stdin]) closeSync(fd);
  }
});

test("docket capabilities list writing to a pipe ends at a stop signal while a file's trial load is slow: the signal it passes on to its own default is not refused as a capability's (tester)", async () => {
  const checkout = tempCheckout();
  const began = join(tempDir("began"), "began");
  // Its top level is slow: the listing waits for its trial, and the signal comes meanwhile.
  writeFiles(join(checkout, "capabilities"), {
    "demo.slow.ts": `import { capability } from "docket";\nimport * as v from "valibot";\nimport { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(began)}, "");\nawait Bun.sleep(4000);\nexport default capability({ id: "demo.slow", title: "Slow", description: "Slow to load.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`,
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const child = Bun.spawn([...fromSource.argv(), "capabilities", "list"], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    for (const until = Date.now() + 20_000; !existsSync(began) && Date.now() < until; await Bun.sleep(20));
    expect(existsSync(began)).toBe(true);
    child.kill(signal);
    const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect(err).not.toContain("would signal the docket process");
    // Ended by the signal: not after listing everything, with 0.
    expect({ signal, code: child.exitCode, by: child.signalCode, listed: out.includes("demo.slow") }).toEqual({ signal, code: null, by: signal, listed: false });
    rmSync(began, { force: true });
  }
}, 60_000);

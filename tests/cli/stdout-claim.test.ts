import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, docket, fromBinary, fromSource, removeTempDirs, spawnDocket, tempDir } from "./_harness.ts";

/** A capability that prints to stdout every way careless code does: at load, and from its handler. */
const LOUD = `import { capability } from "docket";
import * as v from "valibot";
import { execSync, spawnSync } from "node:child_process";
import { writeSync } from "node:fs";
console.log("LOUD-AT-LOAD");
export default capability({
  id: "team.loud",
  title: "Loud",
  description: "Prints to stdout at load and while it runs.",
  effect: "read",
  input: v.object({ bytes: v.optional(v.number(), 0) }),
  output: v.object({ ok: v.boolean(), filler: v.string() }),
  handler: async ({ bytes }) => {
    console.log("LOUD-CONSOLE-LOG");
    console.info("LOUD-CONSOLE-INFO");
    process.stdout.write("LOUD-STDOUT-WRITE\\n");
    writeSync(1, "LOUD-FD-1\\n");
    await Bun.write(Bun.stdout, "LOUD-BUN-STDOUT\\n");
    execSync("echo LOUD-EXEC-INHERIT", { stdio: "inherit" });
    spawnSync("echo", ["LOUD-SPAWN-INHERIT"], { stdio: "inherit" });
    return { ok: true, filler: "y".repeat(bytes) };
  },
});
`;

/** Every line the capability prints; each must end on stderr, none on stdout. */
const NOISE = ["LOUD-AT-LOAD", "LOUD-CONSOLE-LOG", "LOUD-CONSOLE-INFO", "LOUD-STDOUT-WRITE", "LOUD-FD-1", "LOUD-BUN-STDOUT", "LOUD-EXEC-INHERIT", "LOUD-SPAWN-INHERIT"];
const AT_LOAD = NOISE.slice(0, 1);
const fdLevel = process.platform !== "win32";

let root: string;

beforeAll(() => {
  root = tempDir("stdout-claim");
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "team.loud.ts"), LOUD);
});

afterAll(() => removeTempDirs());

/**
 * A run's --format json stdout, which must parse as one document, without the execution's log:
 * what the handler printed with console is its log, and belongs there.
 */
function documentBesidesLog(stdout: string): string {
  const document = JSON.parse(stdout);
  const { log: _log, ...execution } = document.execution;
  return JSON.stringify({ ...document, execution });
}

function expectNoiseOnStderr(run: { stdout: string; stderr: string }, lines: string[]): void {
  for (const line of lines) {
    expect({ line, onStdout: run.stdout.includes(line) }).toEqual({ line, onStdout: false });
    expect({ line, onStderr: run.stderr.includes(line) }).toEqual({ line, onStderr: true });
  }
}

describe("docket run keeps stdout for the result", () => {
  test("docket run --format json prints exactly one JSON document while the capability prints at load, in its handler and from children", async () => {
    const run = await docket(fromSource, ["run", "team.loud", "--format", "json"], { cwd: root });
    expect(run.code).toBe(0);
    const document = JSON.parse(run.stdout);
    expect(document.output).toEqual({ ok: true, filler: "" });
    expect(document.execution.state).toBe("succeeded");
    expectNoiseOnStderr({ ...run, stdout: documentBesidesLog(run.stdout) }, fdLevel ? NOISE : NOISE.slice(0, 4));
    // What the handler prints with console and process.stdout is its execution's log and stream,
    // shown before the verdict (a worker's own stdout came after it, or was lost at exit).
    expect(document.execution.log).toEqual([expect.objectContaining({ level: "info", message: "LOUD-CONSOLE-LOG" }), expect.objectContaining({ level: "info", message: "LOUD-CONSOLE-INFO" })]);
    const verdict = run.stderr.indexOf("succeeded in");
    for (const line of ["LOUD-CONSOLE-LOG", "LOUD-CONSOLE-INFO", "LOUD-STDOUT-WRITE"]) expect({ line, beforeVerdict: run.stderr.indexOf(line) < verdict }).toEqual({ line, beforeVerdict: true });
  });

  test("docket run --format text prints the output alone on stdout", async () => {
    const run = await docket(fromSource, ["run", "team.loud"], { cwd: root });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("ok");
    expectNoiseOnStderr(run, fdLevel ? NOISE : NOISE.slice(0, 4));
  });

  test("docket run --format json writes a large document whole, and exits quietly when its reader stops early", async () => {
    const bytes = 3_000_000;
    const whole = await docket(fromSource, ["run", "team.loud", "--format", "json", "--input", JSON.stringify({ bytes })], { cwd: root });
    expect(whole.code).toBe(0);
    expect(JSON.parse(whole.stdout).output.filler.length).toBe(bytes);

    const child = spawnDocket(fromSource, ["run", "team.loud", "--format", "json", "--input", JSON.stringify({ bytes })], { cwd: root });
    const reader = child.stdout.getReader();
    await reader.read();
    await reader.cancel();
    const stderr = await new Response(child.stderr).text();
    expect(await child.exited).toBe(0);
    expect(stderr).not.toContain("unexpected error");
  });
});

describe("the compiled binary keeps stdout for the result", () => {
  test("the binary's docket run --format json prints one JSON document while the capability writes to fd 1 and runs children", async () => {
    const binary = fromBinary(await buildBinary());
    const run = await docket(binary, ["run", "team.loud", "--format", "json"], { cwd: root });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).output).toEqual({ ok: true, filler: "" });
    expectNoiseOnStderr({ ...run, stdout: documentBesidesLog(run.stdout) }, fdLevel ? NOISE : NOISE.slice(0, 4));
  }, 120_000);
});

describe("docket capabilities keeps stdout for the listing", () => {
  test("docket capabilities list --format json is one JSON document while a capability file prints at load", async () => {
    const run = await docket(fromSource, ["capabilities", "list", "--format", "json"], { cwd: root });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).capabilities.map((c: { id: string }) => c.id)).toContain("team.loud");
    expectNoiseOnStderr(run, AT_LOAD);
  });

  test("docket capabilities show --format json is one JSON document while a capability file prints at load", async () => {
    const run = await docket(fromSource, ["capabilities", "show", "team.loud", "--format", "json"], { cwd: root });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).id).toBe("team.loud");
    expectNoiseOnStderr(run, AT_LOAD);
  });
});

// Trial loads of capability files in a worker (worker/load-probe.ts, docs/containment.md
// "Loading"): what a file's top level does never reaches the main thread unless it ends in time.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileVersion } from "../../runtime/capability/capability-version.ts";
import { createLoadProbe } from "../../runtime/worker/load-probe.ts";
import { DEFAULT_WORKER_URL } from "../../runtime/worker/pool.ts";

const dir = mkdtempSync(join(tmpdir(), "docket-load-probe-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DECLARATION = `import { capability } from "docket";
import * as v from "valibot";
export default capability({ id: "probe.ok", title: "Ok", description: "Loads.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });
`;

/** Writes a capability file whose top level runs `top` first; its path and version. */
function file(name: string, top: string): { path: string; version: string } {
  const path = join(dir, name);
  const text = `import { appendFileSync } from "node:fs";\n${top}\n${DECLARATION}`;
  writeFileSync(path, text);
  return { path, version: fileVersion(text) };
}

const mark = (name: string) => `appendFileSync(${JSON.stringify(join(dir, name))}, "x");`;
const marks = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), "utf8").length : 0);

describe("load probe", () => {
  test("a file that loads is passed, and the same version is not tried again", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 2000 });
    try {
      const ok = file("ok.ts", mark("ok.mark"));
      expect(await probe.check(ok.path, ok.version)).toBeNull();
      expect(marks("ok.mark")).toBe(1);
      await probe.idle();
      expect(await probe.check(ok.path, ok.version)).toBeNull();
      expect(marks("ok.mark")).toBe(1);
    } finally {
      await probe.close();
    }
  });

  test("a synchronous loop at the top level is stopped and reported; the probe goes on with a new worker", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 300 });
    try {
      const loops = file("loops.ts", `${mark("loops.mark")}\nfor (;;) {}`);
      const reason = await probe.check(loops.path, loops.version);
      expect(reason).toContain("did not finish loading within 300 ms when docket tried it in a worker first");
      expect(reason).toContain("DOCKET_LOAD_TIMEOUT_MS");
      expect(marks("loops.mark")).toBe(1);
      // The same text again (a later reload): the same verdict, without running its top level again.
      expect(await probe.check(loops.path, loops.version)).toBe(reason);
      expect(marks("loops.mark")).toBe(1);
      const after = file("after-loop.ts", mark("after-loop.mark"));
      expect(await probe.check(after.path, after.version)).toBeNull();
      expect(marks("after-loop.mark")).toBe(1);
    } finally {
      await probe.close();
    }
  });

  test("a top-level await that never settles and a top-level process.exit are reported", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 300 });
    try {
      const hangs = file("hangs.ts", "await new Promise(() => {});");
      expect(await probe.check(hangs.path, hangs.version)).toContain("did not finish loading within 300 ms");
      const exits = file("exits.ts", "process.exit(9);");
      expect(await probe.check(exits.path, exits.version)).toContain("ended its thread (exit code 9)");
    } finally {
      await probe.close();
    }
  });

  test("a file that throws is passed on: the main thread's own import describes the error", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 2000 });
    try {
      const throws = file("throws.ts", 'throw new Error("broken at the top");');
      expect(await probe.check(throws.path, throws.version)).toBeNull();
    } finally {
      await probe.close();
    }
  });

  test("idle() ends what a top level left running; close() settles a trial in progress", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 5000 });
    const ticking = file("ticking.ts", `setInterval(() => { ${mark("tick.mark")} }, 5);`);
    expect(await probe.check(ticking.path, ticking.version)).toBeNull();
    for (let i = 0; i < 200 && marks("tick.mark") < 2; i++) await Bun.sleep(10);
    expect(marks("tick.mark")).toBeGreaterThanOrEqual(2);
    await probe.idle();
    const stopped = marks("tick.mark");
    await Bun.sleep(100);
    expect(marks("tick.mark")).toBe(stopped);

    const slow = file("slow.ts", "await new Promise(() => {});");
    const pending = probe.check(slow.path, slow.version);
    await Bun.sleep(100);
    await probe.close();
    expect(await pending).toBeNull();
    // Closed: nothing is tried any more.
    const late = file("late.ts", mark("late.mark"));
    expect(await probe.check(late.path, late.version)).toBeNull();
    expect(marks("late.mark")).toBe(0);
  });
});

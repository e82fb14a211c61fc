import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { capability } from "../../runtime/public.ts";
import { createWorkerPool } from "../../runtime/worker/index.ts";

/** A user's capability file: imports only "docket" and "valibot", and exposes what it got from them. */
const USER_CAPABILITY = `
import { capability, CapabilityError } from "docket";
import * as v from "valibot";

export const seen = { capability, CapabilityError, object: v.object, fake: "fake" in v };

export default capability({
  id: "user.greet",
  title: "Greet",
  description: "Greets someone, with a schema of the user's own.",
  effect: "read",
  input: v.object({ name: v.pipe(v.string(), v.minLength(1)) }),
  output: v.object({ greeting: v.string() }),
  handler(input, ctx) {
    ctx.progress.log("greeting " + input.name);
    if (input.name === "nobody") throw new CapabilityError("no_one_to_greet", "There is nobody to greet.", { context: { name: input.name } });
    const parsed = v.parse(v.object({ name: v.string() }), input);
    return { greeting: "hello " + parsed.name + ("fake" in v ? " (fake valibot!)" : "") };
  },
});
`;

let outside = "";
let plainFile = "";
let shadowedFile = "";

beforeAll(async () => {
  // Outside the repository, so no node_modules of ours is an ancestor.
  outside = await mkdtemp(join(tmpdir(), "docket-user-"));
  plainFile = join(outside, "plain", "user.greet.ts");
  await mkdir(join(outside, "plain"));
  await writeFile(plainFile, USER_CAPABILITY);
  // A folder whose ancestor has its own (fake) valibot and docket packages: the virtual modules must win.
  const shadow = join(outside, "shadow");
  for (const pkg of ["valibot", "docket"]) {
    await mkdir(join(shadow, "node_modules", pkg), { recursive: true });
    await writeFile(join(shadow, "node_modules", pkg, "package.json"), JSON.stringify({ name: pkg, version: "0.0.0", type: "module", main: "index.js" }));
    await writeFile(join(shadow, "node_modules", pkg, "index.js"), `export const fake = true; export const capability = (d) => ({ ...d, fake: true }); export class CapabilityError extends Error {}`);
  }
  await mkdir(join(shadow, "capabilities"));
  shadowedFile = join(shadow, "capabilities", "user.greet.ts");
  await writeFile(shadowedFile, USER_CAPABILITY);
});
afterAll(async () => {
  await rm(outside, { recursive: true, force: true });
});

describe("registerDocketModules", () => {
  test("registerDocketModules is idempotent", () => {
    registerDocketModules();
    expect(() => registerDocketModules()).not.toThrow();
  });

  test("a user file with no node_modules imports docket and valibot from this process, in the main thread", async () => {
    registerDocketModules();
    const mod = await import(plainFile);
    expect(mod.default.id).toBe("user.greet");
    // One valibot and one docket for everyone: the very functions and classes this process uses.
    expect(mod.seen).toEqual({ capability, CapabilityError, object: v.object, fake: false });
    expect(v.parse(mod.default.input, { name: "ada" })).toEqual({ name: "ada" });
  });

  test("the virtual modules win over a node_modules/valibot (and docket) above the user's file", async () => {
    registerDocketModules();
    const mod = await import(shadowedFile);
    expect(mod.seen.fake).toBe(false);
    expect(mod.seen.object).toBe(v.object);
    expect(mod.seen.CapabilityError).toBe(CapabilityError);
    expect(mod.default.fake).toBeUndefined();
  });

  test("user files outside the repository load and run on the pool, CapabilityError included", async () => {
    const pool = createWorkerPool({ executionWorkers: 1, hostFacts: () => ({}) as never });
    try {
      const task = (file: string, name: string) => ({
        capability: "user.greet",
        source: { kind: "file" as const, file },
        input: { name },
        execution: null,
        root: outside,
        artifacts_dir: null,
        artifact_limits: { files: 1, bytes: 1, total_bytes: 1, disk_free_floor: 0 },
      });
      const events: unknown[] = [];
      const ok = await pool.run(task(plainFile, "ada"), { lane: "execution", onEvents: (d) => events.push(...d) }).outcome;
      expect(ok).toEqual({ ok: true, output: { greeting: "hello ada" } });
      expect(events).toEqual([{ type: "execution.log", data: { level: "info", message: "greeting ada" } }]);
      expect(await pool.run(task(shadowedFile, "bob"), { lane: "direct" }).outcome).toEqual({ ok: true, output: { greeting: "hello bob" } });
      expect(await pool.run(task(plainFile, "nobody"), { lane: "direct" }).outcome).toMatchObject({
        ok: false,
        error: { kind: "capability", code: "no_one_to_greet", context: { name: "nobody" } },
      });
    } finally {
      await pool.close();
    }
  });
});

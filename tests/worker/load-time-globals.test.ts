import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane, type BootedPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { terminalSnapshot } from "../_support/terminal.ts";

// A file whose top level stubs the timer globals (a fake-timer library, say) must not leave the
// worker's load-time sampler running, nor break the next file's load (worker-entry.ts, ownTimers).
const EDGE = { actor: { kind: "http" as const }, request_id: "r-load-time-globals", trace_id: "0".repeat(32) };
// Counts how often anything in the thread calls performance.now() during 200 ms while the handler waits.
const file = (id: string, top: string) => `import { capability } from "docket";
import * as v from "valibot";
${top}
export default capability({ id: "test.${id}", title: "t", description: "t", effect: "read", input: v.object({}), output: v.object({ calls: v.number() }),
  async handler() {
    const orig = performance.now; let calls = 0;
    performance.now = function () { calls++; return orig.call(performance); };
    await Bun.sleep(200);
    performance.now = orig;
    return { calls };
  } });
`;
let root: string;
let plane: BootedPlane;
beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-h2l-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "test.plain.ts"), file("plain", ""));
  // A top level that stubs clearInterval (a fake-timer or instrumentation library might): it awaits once, so docket's sampler is running.
  writeFileSync(join(root, "capabilities", "test.stub.ts"), file("stub", `await Bun.sleep(30); globalThis.clearInterval = () => {};`));
  plane = await bootPlane({ cwd: root, storeKind: "memory", limits: resolveLimits({ overrides: { max_concurrent: 1, load_timeout_ms: 2000 } }), importFile: (p) => import(p), log: () => undefined });
});
afterAll(async () => { await plane?.close(); rmSync(root, { recursive: true, force: true }); });
const run = async (c: string) => terminalSnapshot(plane.store, plane.engine.start({ capability: c, input: {} } as never, EDGE).execution.id);

test("no docket timer keeps running in the worker after a file's import", async () => {
  const plain = await run("test.plain");
  const stub = await run("test.stub");
  const again = await run("test.stub");
  expect((plain.output as { calls: number }).calls).toBe(0);
  expect((stub.output as { calls: number }).calls).toBe(0);
}, 20_000);

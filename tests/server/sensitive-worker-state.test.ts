import { afterAll, beforeAll, expect, test } from "bun:test";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";
import { completedOf, openLive } from "./_support/live-client.ts";

// The containment tester's t2.proto: one careless line replacing a String method on the worker.
const PATCHING = `import { capability, sensitive } from "docket";
import * as v from "valibot";
export default capability({
  id: "t2.proto", title: "Proto", description: "Replaces String.prototype.indexOf, then prints its secret.", effect: "read",
  input: v.object({ patch: v.boolean(), token: sensitive(v.string()) }),
  output: v.object({ s: v.string() }),
  async handler(input, ctx) {
    if (input.patch) String.prototype.indexOf = function () { return -1; } as never;
    if (input.mode === "dump") ctx.progress.log("ENV " + JSON.stringify(Object.entries(process.env).filter(([key]) => key.startsWith("TT_"))));
    console.log("LOG " + input.token);
    ctx.progress.log("PLOG " + input.token);
    return { s: "OUT " + input.token };
  },
});
`;

// The tester's t2.leak: a secret put into the worker's environment, read by later tasks of anyone.
const LEAKING = `import { capability, sensitive } from "docket";
import * as v from "valibot";
export default capability({
  id: "t2.leak", title: "Leak", description: "Puts its secret in process.env, or reads what is there.", effect: "read",
  input: v.object({ mode: v.picklist(["env", "readenv"]), token: sensitive(v.string()) }),
  output: v.object({ env: v.nullable(v.string()), env2: v.nullable(v.string()) }),
  async handler(input) {
    if (input.mode === "env") {
      process.env.T2_LEAK = input.token;
      (Bun.env as Record<string, string>).T2_LEAK2 = "Bearer " + input.token;
    }
    return { env: process.env.T2_LEAK ?? null, env2: Bun.env.T2_LEAK2 ?? null };
  },
});
`;

// The checking tester's patches: built-ins masking (and docket's messages) call, replaced by a handler.
const PATCHES = `import { capability, sensitive } from "docket";
import * as v from "valibot";
/** A setter at index 0 of owner that turns every [number, number] put there (a range masking found) into [0, 0]. */
const indexSetter = (owner: object) =>
  Object.defineProperty(owner, "0", {
    configurable: true,
    get() { return undefined; },
    set(this: object, x: unknown) {
      Object.defineProperty(this, "0", { value: Array.isArray(x) && x.length === 2 && typeof x[0] === "number" ? [0, 0] : x, writable: true, enumerable: true, configurable: true });
    },
  });
const patches: Record<string, () => void> = {
  iterator: () => {
    const own = Array.prototype[Symbol.iterator];
    Array.prototype[Symbol.iterator] = function (this: unknown[]) {
      return this.length === 2 && typeof this[0] === "number" ? [0, 0][Symbol.iterator]() : own.call(this);
    } as never;
  },
  sethas: () => { Set.prototype.has = () => true; },
  stringify: () => { JSON.stringify = (() => "S") as never; },
  species: () => { Object.defineProperty(RegExp, Symbol.species, { get: () => function () { return /(?!)/g; }, configurable: true }); },
  match: () => { (RegExp.prototype as any)[Symbol.match] = undefined; },
  objindex: () => indexSetter(Object.prototype),
  index: () => indexSetter(Array.prototype),
  flags: () => { Object.defineProperty(RegExp.prototype, "flags", { get: () => "", configurable: true }); },
  global: () => { Object.defineProperty(RegExp.prototype, "global", { get: () => false, configurable: true }); },
  timer: () => {},
  none: () => {},
  dump: () => {},
};
export default capability({
  id: "t4.patch", title: "Patch", description: "Replaces a built-in, then prints its secret.", effect: "read",
  input: v.object({ mode: v.string(), token: sensitive(v.string()) }),
  output: v.object({ ok: v.boolean() }),
  async handler(input, ctx) {
    patches[input.mode]!();
    if (input.mode === "timer") setTimeout(() => { process.env.TT_TIMER = input.token; process.env["TT_" + input.token] = "1"; }, 50);
    if (input.mode === "dump") ctx.progress.log("ENV " + JSON.stringify(Object.entries(process.env).filter(([key]) => key.startsWith("TT_"))));
    console.log("LOG " + input.token);
    ctx.progress.log("PLOG " + input.token);
    ctx.progress.log("ZW " + input.token.slice(0, 4) + "\\u200b" + input.token.slice(4));
    return { ok: true };
  },
});
`;

let served: ServedCheckout;
let server: DocketServer;
beforeAll(async () => {
  served = await serveCapabilityFiles({ "t2.proto.ts": PATCHING, "t2.leak.ts": LEAKING, "t4.patch.ts": PATCHES });
  ({ server } = served);
}, 30_000);
afterAll(() => served?.stop());

async function run(input: Record<string, unknown>, capability = "t2.proto"): Promise<string> {
  const live = await openLive(server.url, "");
  await live.waitFor((f) => f.type === "stream.ready");
  const answer = (await (await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability, input }) })).json()) as any;
  await live.waitFor(completedOf(answer.execution.id));
  await live.close();
  const snapshot = await (await fetch(`${server.url}/api/v1/executions/get?id=${answer.execution.id}`)).text();
  const events = await (await fetch(`${server.url}/api/v1/executions/events?id=${answer.execution.id}`)).text();
  return snapshot + events;
}

test("a handler that replaces String.prototype.indexOf still has its secret masked in its log, and so do later tasks on that worker, of other secrets (containment tester, session 40)", async () => {
  const first = await run({ patch: true, token: "Pa55:w0rd/Sekr3t+Z=q" });
  expect(first).toContain("LOG [redacted]");
  expect(first).toContain("PLOG [redacted]");
  expect(first).not.toContain("Sekr3t");
  // Each worker of the pool gets its turn: at least one of these runs where the patch stays.
  for (let i = 0; i < 4; i++) {
    const later = await run({ patch: false, token: `other-token-${i}-9876` });
    expect(later).toContain("PLOG [redacted]");
    expect(later).not.toContain(`other-token-${i}`);
  }
}, 60_000);

test("a secret a handler leaves in process.env (or Bun.env) is put back once its task ends: no later task on that worker reads it (containment tester, session 40)", async () => {
  const own = await run({ mode: "env", token: "Pa55:w0rd/Sekr3t+Z=q" }, "t2.leak");
  // Its own task reads it (masked in what it returns).
  expect(own).toContain('"env":"[redacted]"');
  for (let i = 0; i < 4; i++) {
    const later = await run({ mode: "readenv", token: `other-token-${i}-9876` }, "t2.leak");
    expect(later).toContain('"env":null,"env2":null');
    expect(later).not.toContain("Sekr3t");
  }
}, 60_000);

const REPLACED: Record<string, string> = {
  iterator: "Array.prototype[Symbol.iterator] (checking tester, session 40)",
  sethas: "Set.prototype.has (checking tester, session 40)",
  stringify: "JSON.stringify (checking tester, session 40)",
  species: "RegExp[Symbol.species] (checking tester, session 40)",
  flags: "the getter of RegExp.prototype.flags (session 41: masking threw into its log call)",
  global: "the getter of RegExp.prototype.global (session 41)",
  match: "RegExp.prototype[Symbol.match] (session 41)",
  index: "an index of Array.prototype with a setter (checking tester, session 41)",
  objindex: "the index 0 of Object.prototype with a setter (checking tester, session 41)",
};
for (const [mode, replaced] of Object.entries(REPLACED)) {
  test(`a handler that replaces ${replaced} has its own secret masked, and the next tasks run on a worker without it, masked and ending`, async () => {
    const own = await run({ mode, token: "SEKRETabc123" }, "t4.patch");
    expect(own).toContain('"succeeded"');
    expect(own).not.toContain("SEKRETabc123");
    expect(own).not.toContain("SEKR\\u200bETabc123");
    for (let i = 0; i < 3; i++) {
      const later = await run({ mode: "none", token: `OTHERxyz78${i}` }, "t4.patch").catch((error) => String(error));
      expect(later).toContain("PLOG [redacted]");
      expect(later).not.toContain(`OTHERxyz78${i}`);
    }
  }, 60_000);
}

test("a secret put in process.env by a timer its task left running is put back before the next task, as a value or as a name (checking tester, session 40)", async () => {
  await run({ mode: "timer", token: "TIMERsekret42" }, "t4.patch");
  await Bun.sleep(200);
  for (let i = 0; i < 3; i++) {
    const later = await run({ mode: "dump", token: `other-token-${i}-1111` }, "t4.patch");
    expect(later).toContain("ENV [");
    expect(later).not.toContain("TIMERsekret42");
  }
}, 60_000);

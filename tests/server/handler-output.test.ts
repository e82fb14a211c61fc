// What a handler returns is stored as JSON would write it, or its execution fails naming where
// (docs/handler-api.md). Checked in the handler's worker on the value as returned: the thread copy
// (structured clone) turns a class instance into a plain object of its own fields, and ignores a
// toJSON, so a check of what arrived on the main thread saw `{}` where a class was returned.
// A real server over a checkout, one worker per lane, asked over HTTP and the live channel.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { useDocketModules } from "../_support/capability-fixtures.ts";
import { tempCheckout } from "./_support/servers.ts";
import { completedOf, openLive, type LiveConnection } from "./_support/live-client.ts";

const RETURNS = `import { capability } from "docket";
import * as v from "valibot";

class Point {
  #x = 1;
  get x() { return this.#x; }
}
class Total {
  get total() { return 3; }
}
class Fields {
  constructor() { this.a = 1; }
}
class Celsius {
  constructor(degrees) { this.degrees = degrees; }
  toJSON() { return { celsius: this.degrees, at: new Date(0) }; }
}
class Reading {
  constructor(value) { this.value = value; }
  toJSON() { return this.value; }
}
class Secretive {
  toJSON() { throw new Error("toJSON boom"); }
}

const OUTPUTS = {
  point: () => ({ point: new Point() }),
  total: () => ({ items: [1, new Total()] }),
  fields: () => new Fields(),
  error: () => ({ error: new Error("e") }),
  regexp: () => ({ pattern: /a/ }),
  string: () => ({ name: new String("n") }),
  celsius: () => ({ temperature: new Celsius(21.5) }),
  url: () => ({ url: new URL("https://example.com/a?b=1") }),
  infinity: () => ({ reading: new Reading(Infinity) }),
  map: () => ({ reading: new Reading(new Map([["a", 1]])) }),
  nested: () => ({ reading: new Reading({ deep: [{ toJSON: () => NaN }] }) }),
  instance: () => ({ reading: new Reading(new Point()) }),
  throws: () => ({ reading: new Secretive() }),
  date: () => ({ at: new Date(86400000) }),
  holes: () => ({ list: [1, undefined, 3] }),
  cycle: () => {
    const cycle = { when: new Date(0) };
    cycle.self = cycle;
    return cycle;
  },
  plain: () => ({ ok: true }),
  // Each read once, as JSON.stringify reads it: a getter or a toJSON answering otherwise the next time.
  flipMap: () => { let n = 0; return { get g() { n++; return n === 1 ? 1 : new Map([[1, 2]]); } }; },
  flipNaN: () => { let n = 0; return { get g() { n++; return n === 1 ? 1 : NaN; } }; },
  flipPoint: () => { let n = 0; return { get g() { n++; return n === 1 ? 1 : new Point(); } }; },
  counted: () => { let n = 0; return { a: { toJSON() { n++; return { calls: n }; } } }; },
  infThenOne: () => { let n = 0; return { a: { toJSON() { n++; return n === 1 ? Infinity : 1; } } }; },
  oneThenShared: () => {
    let n = 0;
    return { a: { toJSON() { n++; if (n === 1) return 1; let x = [1]; for (let i = 0; i < 60; i++) x = [x, x]; return x; } } };
  },
  // 2^31 members, each 1: as long as its deadline to walk, unless stopped at output_bytes.
  proxyLength: () => new Proxy([], { get(target, key) { return key === "length" ? 2 ** 31 : 1; } }),
};

export default capability({
  id: "out.returns",
  title: "Returns",
  description: "Returns the output its input names.",
  effect: "read",
  input: v.object({ kind: v.string() }),
  output: v.unknown(),
  handler: (input) => OUTPUTS[input.kind](),
});
`;

const ENDS = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "out.ends",
  title: "Ends",
  description: "Throws, waits to be cancelled, or returns an output whose getter throws.",
  effect: "read",
  cancellable: true,
  input: v.object({ how: v.picklist(["throws", "cancelled", "getter"]) }),
  output: v.unknown(),
  async handler(input, ctx) {
    if (input.how === "throws") throw new Error("handler boom");
    if (input.how === "cancelled") {
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      throw ctx.progress.cancellation();
    }
    return { value: { get g() { throw new Error("getter boom"); } } };
  },
});
`;

let server: DocketServer;
let root: string;
const log: string[] = [];

beforeAll(async () => {
  useDocketModules();
  root = tempCheckout();
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "out.returns.js"), RETURNS);
  writeFileSync(join(root, "capabilities", "out.ends.js"), ENDS);
  // One worker in each lane: a task after one that ended is taken by the same worker, or by none.
  const limits = resolveLimits({ overrides: { max_concurrent: 1, output_bytes: 1024 * 1024 } });
  server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits, capabilityDirs: [], runtime: "bun", log: (line) => log.push(line) });
}, 30_000);

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function post(path: string, body: unknown): Promise<any> {
  return (await fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json();
}

/** Runs an execution to its end, as the live channel tells it; `running` is called once it began. */
async function execution(live: LiveConnection, capability: string, input: unknown, running?: (id: string) => Promise<void>): Promise<any> {
  const { execution } = await post("/api/v1/executions/start", { capability, input });
  if (running) {
    await live.waitFor((frame) => frame.type === "execution.started" && frame.execution_id === execution.id);
    await running(execution.id);
  }
  await live.waitFor(completedOf(execution.id));
  return (await fetch(`${server.url}/api/v1/executions/get?id=${execution.id}`)).json();
}

/** Runs out.returns with `kind` as an execution and as a direct call: both answers. */
async function returned(live: LiveConnection, kind: string): Promise<{ snapshot: any; direct: any }> {
  return { snapshot: await execution(live, "out.returns", { kind }), direct: await post("/api/v1/out/returns", { kind }) };
}

/** Expects both answers to be the refusal of an output JSON cannot hold as it is, at `path`. */
function expectRefused(answers: { snapshot: any; direct: any }, path: string, what: string): void {
  const failure = { error_code: "internal", stage: "complete", context: { reason: "not_json", path } };
  expect(answers.snapshot.state).toBe("failed");
  expect(answers.snapshot.failure).toMatchObject(failure);
  expect(answers.snapshot.failure.message).toBe(`out.returns returned an output that JSON cannot hold as it is: ${path} is ${what}.`);
  expect(answers.direct.error).toMatchObject({ ...failure, message: answers.snapshot.failure.message });
}

/** Expects both answers to have succeeded with `output`. */
function expectStored(answers: { snapshot: any; direct: any }, output: unknown): void {
  expect(answers.snapshot.state).toBe("succeeded");
  expect(answers.snapshot.output).toEqual(output);
  expect(answers.direct).toEqual(output);
}

const CLASS = "not a plain object, which JSON writes as its own fields only";

describe("a handler's output, as returned", () => {
  test("a class instance is refused naming where it is: not stored as {} nor as its own fields", async () => {
    const live = await openLive(server.url);
    try {
      // Its fields private (#x) or its members getters of its prototype: the copy was {}.
      expectRefused(await returned(live, "point"), "output.point", `a Point object, ${CLASS}`);
      expectRefused(await returned(live, "total"), "output.items[1]", `a Total object, ${CLASS}`);
      // Its own fields: the copy was { a: 1 }, as if the handler had returned that.
      expectRefused(await returned(live, "fields"), "output", `a Fields object, ${CLASS}`);
      // What the copy keeps as a class of its own: refused as before.
      expectRefused(await returned(live, "error"), "output.error", `an Error object, ${CLASS}`);
      expectRefused(await returned(live, "regexp"), "output.pattern", `a RegExp object, ${CLASS}`);
      expectRefused(await returned(live, "string"), "output.name", `a String object, ${CLASS}`);
    } finally {
      await live.close();
    }
  });

  test("what has a toJSON is stored as JSON writes it, or refused at its path when what toJSON returns is not plain JSON", async () => {
    const live = await openLive(server.url);
    try {
      // The copy kept { degrees: 21.5 }; JSON writes what toJSON returns, a Date in it as a string.
      expectStored(await returned(live, "celsius"), { temperature: { celsius: 21.5, at: "1970-01-01T00:00:00.000Z" } });
      // The copy failed, said to hold a function or a Symbol.
      expectStored(await returned(live, "url"), { url: "https://example.com/a?b=1" });
      // The copy kept { value: Infinity } and the rest: none is what JSON writes.
      expectRefused(await returned(live, "infinity"), "output.reading", "a Reading object whose toJSON() returns Infinity, which JSON writes as null");
      expectRefused(await returned(live, "map"), "output.reading", "a Reading object whose toJSON() returns a Map, which JSON writes as {}");
      expectRefused(await returned(live, "nested"), "output.reading.deep[0]", "an object whose toJSON() returns NaN, which JSON writes as null");
      expectRefused(await returned(live, "instance"), "output.reading", `a Reading object whose toJSON() returns a Point object, ${CLASS}`);
      const threw = await returned(live, "throws");
      expectRefused(threw, "output.reading", "a Secretive object whose toJSON() threw an Error");
      // What it threw is the handler's own: it reaches no client, nor the log.
      expect(JSON.stringify(threw)).not.toContain("toJSON boom");
      expect(log.join("\n")).not.toContain("toJSON boom");
      // As JSON writes them: a Date as its ISO string, undefined in an array as null.
      expectStored(await returned(live, "date"), { at: "1970-01-02T00:00:00.000Z" });
      expectStored(await returned(live, "holes"), { list: [1, null, 3] });
    } finally {
      await live.close();
    }
  });

  test("an output is read once, as JSON writes it: what is stored is what that reading wrote, or the refusal of what it read", async () => {
    const live = await openLive(server.url);
    try {
      // Checked on one reading and written from another, these were stored as {"g":{}} and {"g":null}.
      expectStored(await returned(live, "flipMap"), { g: 1 });
      expectStored(await returned(live, "flipNaN"), { g: 1 });
      expectStored(await returned(live, "flipPoint"), { g: 1 });
      // toJSON called once, as JSON.stringify calls it: not { calls: 2 }.
      expectStored(await returned(live, "counted"), { a: { calls: 1 } });
      // What JSON read was Infinity: refused, not stored as the 1 a second call returned.
      expectRefused(await returned(live, "infThenOne"), "output.a", "Infinity, which JSON writes as null");
      // What JSON read was 1: stored, and no second call grows a value reached on 2^60 paths.
      expectStored(await returned(live, "oneThenShared"), { a: 1 });
    } finally {
      await live.close();
    }
  });

  test("an array reporting 2^31 members is stopped at output_bytes, not walked until its deadline", async () => {
    const live = await openLive(server.url);
    try {
      const { snapshot, direct } = await returned(live, "proxyLength");
      const failure = { error_code: "internal", stage: "complete", context: { reason: "output_too_large", limit: 1024 * 1024 } };
      expect(snapshot).toMatchObject({ state: "failed", failure });
      expect(direct.error).toMatchObject(failure);
      expect((await execution(live, "out.returns", { kind: "plain" })).output).toEqual({ ok: true });
    } finally {
      await live.close();
    }
  });

  test("an output that holds itself is refused in its worker as too deep, as the main thread said it", async () => {
    const live = await openLive(server.url);
    try {
      const { snapshot, direct } = await returned(live, "cycle");
      const failure = { error_code: "internal", stage: "complete", context: { reason: "not_json", limit: 128 }, message: "out.returns returned an output that nests deeper than 128 levels, or holds itself (a cycle); it cannot be stored or shown." };
      expect(snapshot).toMatchObject({ state: "failed", failure });
      expect(direct.error).toMatchObject(failure);
    } finally {
      await live.close();
    }
  });

  test("a handler that throws, one cancelled and one whose output's getter throws each end, and the lane's one worker takes the next task", async () => {
    const live = await openLive(server.url);
    try {
      const threw = await execution(live, "out.ends", { how: "throws" });
      expect(threw).toMatchObject({ state: "failed", failure: { error_code: "internal", stage: "run" } });
      expect((await execution(live, "out.returns", { kind: "plain" })).output).toEqual({ ok: true });

      const cancelled = await execution(live, "out.ends", { how: "cancelled" }, async (id) => {
        expect((await post("/api/v1/executions/cancel", { id })).requested).toBe(true);
      });
      expect(cancelled).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled" } });
      expect((await execution(live, "out.returns", { kind: "plain" })).output).toEqual({ ok: true });

      const getter = await execution(live, "out.ends", { how: "getter" });
      expect(getter).toMatchObject({ state: "failed", failure: { error_code: "internal", stage: "complete", context: { reason: "not_json", path: "output.value.g" } } });
      expect((await execution(live, "out.returns", { kind: "plain" })).output).toEqual({ ok: true });

      // The direct lane, its one worker likewise.
      expect((await post("/api/v1/out/ends", { how: "throws" })).error).toMatchObject({ error_code: "internal", stage: "run" });
      expect(await post("/api/v1/out/returns", { kind: "plain" })).toEqual({ ok: true });
      expect((await post("/api/v1/out/ends", { how: "getter" })).error).toMatchObject({ error_code: "internal", stage: "complete", context: { reason: "not_json" } });
      expect(await post("/api/v1/out/returns", { kind: "plain" })).toEqual({ ok: true });

      // No worker stopped, was replaced or caught an error outside its task; the getter's message
      // is the handler's own (the log has the thrown handlers' stacks only).
      expect(log.join("\n")).not.toMatch(/(An? (execution|direct|idle \w+) worker)|replac|getter boom/);
    } finally {
      await live.close();
    }
  });
});

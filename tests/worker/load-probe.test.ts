// Trial loads of capability files in a worker (worker/load-probe.ts, docs/containment.md
// "Loading"): what a file's top level does never reaches the main thread unless it ends in time.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CapabilitySources } from "../../runtime/capability/capability-sources.ts";
import { fileVersion } from "../../runtime/capability/capability-version.ts";
import { readSources } from "../../runtime/capability/pinned-sources.ts";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { createLoadProbe, MAX_PARKED, TRIALS_PER_WORKER } from "../../runtime/worker/load-probe.ts";
import { UNSAID } from "../../runtime/execution/thrown.ts";
import { DEFAULT_WORKER_URL } from "../../runtime/worker/pool.ts";

const dir = mkdtempSync(join(tmpdir(), "docket-load-probe-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DECLARATION = `import { capability } from "docket";
import * as v from "valibot";
export default capability({ id: "probe.ok", title: "Ok", description: "Loads.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });
`;

/** The text of a capability file whose top level runs `top` first. */
const source = (top: string) => `import { appendFileSync } from "node:fs";\n${top}\n${DECLARATION}`;

/** Writes a capability file whose top level runs `top` first; its path, version and text. */
function file(name: string, top: string): { path: string; version: string; text: string } {
  const path = join(dir, name);
  const text = source(top);
  writeFileSync(path, text);
  return { path, version: fileVersion(text), text };
}

/** A file's source as discovery reads it, for a text that imports no local module. */
const sourcesOf = (path: string, text: string): CapabilitySources => {
  const version = fileVersion(text);
  return { file: path, text, version, modules: [{ path, text, imports: [], key: version, served: text }], commonJs: false };
};

/** Checks a file as discovery does: with the text it read. */
const check = (probe: ReturnType<typeof createLoadProbe>, f: { path: string; version: string; text: string }) => probe.check(sourcesOf(f.path, f.text));

/** A capability file `<name>.ts` importing `<name>.json`, about 21 MB of JSON, whose top level runs `top` first; its source as discovery reads it. */
async function bigDataFile(name: string, top: string): Promise<{ sources: CapabilitySources }> {
  const rows = Array.from({ length: 200_000 }, (_, i) => ({ id: i, name: `item-${i}`, tags: [`a${i % 7}`, `b${i % 13}`], score: ((i * 7919) % 1000) / 10, note: `lorem ipsum dolor sit amet ${i % 100}` }));
  writeFileSync(join(dir, `${name}.json`), JSON.stringify({ rows }));
  const path = join(dir, `${name}.ts`);
  const text = source(`import data from "./${name}.json";\n${top}\nif (data.rows.length !== 200000) throw new Error("not all rows");`);
  writeFileSync(path, text);
  return { sources: await readSources(path, text) };
}

const mark = (name: string) => `appendFileSync(${JSON.stringify(join(dir, name))}, "x");`;
const marks = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), "utf8").length : 0);

describe("load probe", () => {
  test("a file that loads is passed, and the same version is not tried again", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 2000 });
    try {
      const ok = file("ok.ts", mark("ok.mark"));
      expect(await check(probe, ok)).toBeNull();
      expect(marks("ok.mark")).toBe(1);
      expect(await check(probe, ok)).toBeNull();
      expect(marks("ok.mark")).toBe(1);
    } finally {
      await probe.close();
    }
  });

  test("a synchronous loop at the top level is stopped and reported; the probe goes on with a new worker", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 300 });
    try {
      const loops = file("loops.ts", `${mark("loops.mark")}\nfor (;;) {}`);
      const verdict = (await check(probe, loops))!;
      expect(verdict.code).toBe("load_timeout");
      expect(verdict.reason).toContain("did not finish loading within 300 ms when docket tried it in a worker first");
      expect(verdict.reason).toContain("DOCKET_LOAD_TIMEOUT_MS");
      expect(marks("loops.mark")).toBe(1);
      // The same text again (a later reload): the same verdict, without running its top level again.
      expect(await check(probe, loops)).toEqual(verdict);
      expect(marks("loops.mark")).toBe(1);
      const after = file("after-loop.ts", mark("after-loop.mark"));
      expect(await check(probe, after)).toBeNull();
      expect(marks("after-loop.mark")).toBe(1);
    } finally {
      await probe.close();
    }
  });

  test("a top-level await that never settles and a top-level process.exit are reported", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 300 });
    try {
      const hangs = file("hangs.ts", "await new Promise(() => {});");
      expect(await check(probe, hangs)).toMatchObject({ code: "load_timeout", reason: expect.stringContaining("did not finish loading within 300 ms") });
      const exits = file("exits.ts", "process.exit(9);");
      expect(await check(probe, exits)).toMatchObject({ code: "import_failed", reason: expect.stringContaining("ended its thread (exit code 9)") });
    } finally {
      await probe.close();
    }
  });

  test("what a refused file's top level printed is in its detail for the server's log (its last words, as text); a client reads that it is there; a file that loads and prints adds nothing", async () => {
    // 1.5 s: a file printing 5,000 lines outlasted 300 ms on a loaded machine (a CI run beside three testers).
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 1500 });
    try {
      const exits = file("says-and-exits.ts", 'console.log("reading config");\nconsole.error("FATAL: \\x1b]0;title\\x07DEPLOY_TARGET is not set");\nprocess.exit(1);');
      const exited = (await check(probe, exits))!;
      expect(exited.reason).toContain("ended its thread (exit code 1)");
      expect(exited.reason).toContain("the server's log shows what its top level printed");
      expect(exited.reason).not.toContain("FATAL");
      expect(exited.detail).toContain("Its top level printed:\n  | reading config\n  | FATAL: DEPLOY_TARGET is not set");
      const hangs = file("says-and-hangs.ts", 'process.stdout.write("warming the cache… ");\nawait new Promise(() => {});');
      expect((await check(probe, hangs))!.detail).toEndWith("Its top level printed:\n  | warming the cache…");
      const chatty = file("says-much-and-throws.ts", 'for (let i = 0; i < 5000; i++) console.log(`line ${i}`);\nthrow new Error("then broke");');
      const broke = (await check(probe, chatty))!;
      expect(broke.detail).toStartWith("it threw while loading: then broke. Its top level printed:\n  | …\n  | line 4");
      expect(broke.detail).toEndWith("  | line 4999");
      expect(broke.detail!.length).toBeLessThan(3200);
      // One line longer than what is kept: its end is shown, from where it was cut (checking tester).
      const long = file("says-long-and-exits.ts", 'console.log("START-BIG " + "x".repeat(5000) + " END-BIG");\nprocess.exit(3);');
      const longDetail = (await check(probe, long))!.detail!;
      expect(longDetail).toContain("Its top level printed:\n  | …xxx");
      expect(longDetail).toEndWith("xxx END-BIG");
      const quiet = file("says-and-loads.ts", 'console.log("loaded fine");');
      expect(await check(probe, quiet)).toBeNull();
    } finally {
      await probe.close();
    }
  });

  test("with patience, a trial that outlasts it is parked and the next check goes on at once; its verdict, once known, is answered at once and is never tried twice", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 30_000 });
    try {
      const gate = join(dir, "parked.gate");
      // Its top level waits for the gate, then throws: its verdict comes only when the test says.
      const waits = file("parked-waits.ts", `${mark("parked-waits.mark")}\nwhile (!(await Bun.file(${JSON.stringify(gate)}).exists())) await Bun.sleep(5);\nthrow new Error("opened and broke");`);
      const first = await probe.check(sourcesOf(waits.path, waits.text), 100);
      expect(first).toEqual({ parked: expect.any(Promise) });
      // The next file is tried while the parked one still runs (load_timeout_ms is 30 s). Its own
      // patience is long: a worker's start took over 100 ms on a loaded machine, which parked it too.
      expect(await probe.check(sourcesOf(file("parked-next.ts", "").path, source("")), 10_000)).toBeNull();
      // Asked again meanwhile, the same text is not run a second time: the same parked trial.
      const again = await probe.check(sourcesOf(waits.path, waits.text), 100);
      expect(again).toEqual({ parked: expect.any(Promise) });
      expect(marks("parked-waits.mark")).toBe(1);
      let settled = false;
      void (first as { parked: Promise<void> }).parked.then(() => (settled = true));
      await Bun.sleep(50);
      expect(settled).toBe(false);
      writeFileSync(gate, "");
      await (first as { parked: Promise<void> }).parked;
      await (again as { parked: Promise<void> }).parked;
      // Its verdict is answered at once, with or without patience, and the file ran once.
      expect(await probe.check(sourcesOf(waits.path, waits.text), 100)).toMatchObject({ code: "import_failed", reason: expect.stringContaining("it threw while loading: Error") });
      expect(await check(probe, waits)).toMatchObject({ code: "import_failed" });
      expect(marks("parked-waits.mark")).toBe(1);
      // Without patience a check waits for its verdict, however long.
      rmSync(gate);
      const slow = file("parked-slow.ts", "await Bun.sleep(300);");
      expect(await check(probe, slow)).toBeNull();
    } finally {
      await probe.close();
    }
  });

  test("a parked refusal that is not kept (memory) is answered once, then tried again; no more than MAX_PARKED trials are parked at once; close() ends the parked ones", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 30_000, memoryLimitMb: 64 });
    try {
      const gate = join(dir, "hog.gate");
      const hog = file("parked-hog.ts", `${mark("parked-hog.mark")}\nwhile (!(await Bun.file(${JSON.stringify(gate)}).exists())) await Bun.sleep(5);\nconst rows: number[][] = [];\nfor (;;) rows.push(new Array(1_000_000).fill(1));`);
      const parked = await probe.check(sourcesOf(hog.path, hog.text), 100);
      expect(parked).toEqual({ parked: expect.any(Promise) });
      writeFileSync(gate, "");
      await (parked as { parked: Promise<void> }).parked;
      expect(await probe.check(sourcesOf(hog.path, hog.text), 100)).toMatchObject({ reason: expect.stringContaining("grew past the memory limit of 64 MiB") });
      expect(marks("parked-hog.mark")).toBe(1);
      // Not kept: the next check tries it again (memory the process grew meanwhile may have been to blame).
      expect(await check(probe, hog)).toMatchObject({ reason: expect.stringContaining("grew past the memory limit") });
      expect(marks("parked-hog.mark")).toBe(2);

      const hangs = Array.from({ length: MAX_PARKED }, (_, i) => file(`parked-hang-${i}.ts`, `${mark(`parked-hang-${i}.mark`)}\nawait new Promise(() => {});`));
      const verdicts = [];
      for (const hang of hangs) verdicts.push(await probe.check(sourcesOf(hang.path, hang.text), 50));
      expect(verdicts).toEqual(hangs.map(() => ({ parked: expect.any(Promise) })));
      // One more waits for its verdict: it is not parked beside them.
      const waited = probe.check(sourcesOf(file("parked-one-more.ts", "await Bun.sleep(200);").path, source("await Bun.sleep(200);")), 50);
      expect(await waited).toBeNull();
      await probe.close();
      // Closing ends the parked trials: each settles, and their texts are never passed.
      await Promise.all(verdicts.map((verdict) => (verdict as { parked: Promise<void> }).parked));
      expect(await probe.check(sourcesOf(hangs[0]!.path, hangs[0]!.text), 50)).toMatchObject({ reason: expect.stringContaining("the server is stopping") });
    } finally {
      await probe.close();
    }
  });

  test("trials that pass run one after the other in one worker, which still tells what a later top level leaves running; after a refusal, after TRIALS_PER_WORKER trials and after a read (rest), the next trial has a new worker", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 5000 });
    const threads = join(dir, "trial-threads.txt");
    const recordThread = `const { threadId } = await import("node:worker_threads");\nappendFileSync(${JSON.stringify(threads)}, threadId + "\\n");`;
    const threadIds = () => readFileSync(threads, "utf8").trim().split("\n");
    try {
      for (const name of ["reused-1", "reused-2"]) expect(await check(probe, file(`${name}.ts`, recordThread))).toBeNull();
      // Its top level starts an interval in the worker two trials passed in: still refused, by line.
      const ticks = file("reused-ticks.ts", `${recordThread}\nsetInterval(() => {}, 1000);`);
      expect(await check(probe, ticks)).toMatchObject({ reason: expect.stringContaining("its top level left an interval running (setInterval at line 4)") });
      expect(await check(probe, file("after-refusal.ts", recordThread))).toBeNull();
      // Refused in the worker two trials passed in, the file is tried again in a new worker (where
      // nothing of another file can be to blame), and refused there too.
      const [first, second, third, again, fifth] = threadIds();
      expect(second).toBe(first!);
      expect(third).toBe(first!);
      expect(again).not.toBe(first!);
      expect(fifth).not.toBe(again!);
      expect(fifth).not.toBe(first!);
      // A worker runs TRIALS_PER_WORKER trials at most: the next one starts afresh.
      for (let i = 1; i < TRIALS_PER_WORKER; i++) expect(await check(probe, file(`many-${i}.ts`, `${recordThread}\n// ${i}`))).toBeNull();
      expect(await check(probe, file("many-last.ts", recordThread))).toBeNull();
      const ids = threadIds().slice(4);
      expect(new Set(ids.slice(0, TRIALS_PER_WORKER)).size).toBe(1);
      expect(ids[TRIALS_PER_WORKER]).not.toBe(ids[0]!);
      // A read of the folders over (rest), the next read's first trial has a new worker: it
      // imports packages as they are installed then, not as modules that worker cached.
      expect(await check(probe, file("same-read.ts", recordThread))).toBeNull();
      probe.rest();
      expect(await check(probe, file("next-read.ts", recordThread))).toBeNull();
      const [sameRead, nextRead] = threadIds().slice(-2);
      expect(sameRead).toBe(ids[TRIALS_PER_WORKER]!);
      expect(nextRead).not.toBe(sameRead!);
    } finally {
      await probe.close();
    }
  });

  test("a worker a package left a timer in, or whose built-ins a top level replaced, runs no further trial: the next file's verdict is its own (tester)", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 1500 });
    const threads = join(dir, "spent-threads.txt");
    const recordThread = `const { threadId } = await import("node:worker_threads");\nappendFileSync(${JSON.stringify(threads)}, threadId + "\\n");`;
    const threadIds = () => readFileSync(threads, "utf8").trim().split("\n");
    // A package whose import starts a timer that holds its thread two seconds later: no file's to refuse.
    const pkg = join(dir, "node_modules", "warm-cache");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "warm-cache", version: "1.0.0", main: "index.js" }));
    writeFileSync(join(pkg, "index.js"), "setTimeout(() => { const t = Date.now(); while (Date.now() - t < 2000) {} }, 300);\nmodule.exports = { lookup: () => 1 };\n");
    try {
      expect(await check(probe, file("spent-uses-package.ts", `${recordThread}\nimport { lookup } from "warm-cache";\nlookup();`))).toBeNull();
      // Slow enough for the package's timer to fire during it, were it in the same worker.
      expect(await check(probe, file("spent-next.ts", `${recordThread}\nawait Bun.sleep(600);`))).toBeNull();
      // A top level that replaces a built-in real packages patch (a seeded Math.random): the next file is tried elsewhere, and its interval is still seen.
      expect(await check(probe, file("spent-patches.ts", `${recordThread}\nconst random = Math.random;\nMath.random = () => random();`))).toBeNull();
      expect(await check(probe, file("spent-leaks.ts", `${recordThread}\nsetInterval(() => {}, 700);`))).toMatchObject({ reason: expect.stringContaining("its top level left an interval running") });
      const [uses, next, patches, leaks] = threadIds();
      expect(next).not.toBe(uses!);
      expect(patches).toBe(next!);
      expect(leaks).not.toBe(patches!);
    } finally {
      await probe.close();
      rmSync(join(dir, "node_modules"), { recursive: true, force: true });
    }
  });

  test("a top level that holds its thread a second or more loads, and the log says the main thread will be held as long at each import; one that waits without holding it is not said (foundation tester, session 44)", async () => {
    const lines: string[] = [];
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 8000, report: (line) => lines.push(line) });
    try {
      const slow = file("slow-top.ts", "const end = Date.now() + 1300;\nwhile (Date.now() < end) {}\nexport const ready = true;");
      expect(await check(probe, slow)).toBeNull();
      const said = lines.filter((line) => line.includes("its top level held its thread"));
      expect(said).toHaveLength(1);
      expect(said[0]).toContain(slow.path);
      expect(said[0]).toMatch(/held its thread for 1\.\d s/);
      expect(said[0]).toContain("Move slow work into the handler");
      expect(await check(probe, file("waits-top.ts", "await Bun.sleep(1300);\nexport const ready = true;"))).toBeNull();
      expect(lines.filter((line) => line.includes("its top level held its thread"))).toHaveLength(1);
    } finally {
      await probe.close();
    }
  });

  test("a top level that replaces a method of the language's own objects (JSON.parse, Array.prototype.map, Promise.prototype.then…) is refused, naming it: on the main thread the server's own code would call it (foundation tester, session 44)", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 1500 });
    try {
      const cases: Array<[name: string, line: string, named: string]> = [
        ["parse.ts", "JSON.parse = () => ({ hacked: true });", "JSON.parse"],
        ["stringify.ts", 'JSON.stringify = () => "HACKED";', "JSON.stringify"],
        ["map.ts", 'Array.prototype.map = function () { return ["pwned"]; } as any;', "Array.prototype.map"],
        ["includes.ts", "const includes = String.prototype.includes;\nString.prototype.includes = function (s: string, ...r: number[]) { return includes.call(this, s, ...r); };", "String.prototype.includes"],
        ["then.ts", "Promise.prototype.then = function (this: any) { return this; } as any;", "Promise.prototype.then"],
        ["removes.ts", "delete (Map.prototype as any).get;", "Map.prototype.get"],
        // Third checking tester, session 44: the global binding, an index setter, a constructor's own method, an added hook.
        ["global-json.ts", "(globalThis as any).JSON = { ...JSON, parse: () => ({}) };", "globalThis.JSON"],
        ["index-setter.ts", 'Object.defineProperty(Array.prototype, "0", { configurable: true, get() { return undefined; }, set() {} });', "Array.prototype.0"],
        ["number-static.ts", "Number.isInteger = () => false;", "Number.isInteger"],
        ["to-json.ts", 'Object.defineProperty(Array.prototype, "toJSON", { value: () => ["pwned"], configurable: true, writable: true });', "Array.prototype.toJSON"],
      ];
      for (const [name, line, named] of cases) {
        const verdict = await check(probe, file(name, line));
        expect(verdict, name).toMatchObject({ code: "import_failed", line: null });
        expect(verdict!.reason, name).toStartWith(`its top level (or a package it imports) replaced ${named} when docket tried it in a worker first`);
        expect(verdict!.reason).toContain("did not import it");
      }
      // After them, a plain file still loads: every refusal left a worker no further trial runs in.
      expect(await check(probe, file("plain-after.ts", "export const x = [1, 2].map((n) => n * 2);"))).toBeNull();
    } finally {
      await probe.close();
    }
  });

  test("a top level that adds or replaces what every object shares (a deep merge of a parsed __proto__) is refused, naming what: on the main thread every object of the server would have it (hostile tester, session 38)", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 1500 });
    try {
      const merge = 'function merge(t: any, s: any) { for (const k in s) { if (typeof s[k] === "object") { t[k] ??= {}; merge(t[k], s[k]); } else t[k] = s[k]; } return t; }\nmerge({}, JSON.parse(\'{"__proto__": {"debug": true}}\'));';
      const verdict = (await check(probe, file("pollutes.ts", merge)))!;
      expect(verdict).toMatchObject({ code: "import_failed", line: null });
      expect(verdict.reason).toStartWith("its top level (or a package it imports) added or replaced Object.prototype.debug when docket tried it in a worker first");
      expect(verdict.reason).toContain("Object.create(null)");
      expect(verdict.reason).toContain("a polyfill package");
      // Not enumerable, a symbol, several: each is a key every object then has.
      const many = (await check(probe, file("pollutes-many.ts", 'Object.defineProperty(Object.prototype, "hidden", { value: 1, configurable: true });\n(Object.prototype as any)[Symbol.for("tag")] = 1;\nfor (const k of ["a", "b", "c"]) (Object.prototype as any)[k] = 1;')))!;
      expect(many.reason).toStartWith("its top level (or a package it imports) added or replaced Object.prototype.hidden, Object.prototype.a, Object.prototype.b and 2 more");
      // A method every object has, replaced; a key every array has (checking tester).
      expect((await check(probe, file("replaces.ts", "Object.prototype.toLocaleString = function () { return \"x\"; };")))!.reason).toStartWith("its top level (or a package it imports) added or replaced Object.prototype.toLocaleString");
      expect((await check(probe, file("arrays.ts", "(Array.prototype as any).polluted = 1;")))!.reason).toStartWith("its top level (or a package it imports) added or replaced Array.prototype.polluted");
      // What every function has, replaced; Object.prototype frozen (second checking tester).
      expect((await check(probe, file("functions.ts", 'Function.prototype.toString = () => "patched";')))!.reason).toStartWith("its top level (or a package it imports) added or replaced Function.prototype.toString");
      expect((await check(probe, file("freezes.ts", "Object.freeze(Object.prototype);")))!.reason).toStartWith("its top level (or a package it imports) added or replaced Object.prototype (frozen or sealed)");
      // What arrays inherit, swapped; a getter that throws in place of a method (third checking tester).
      expect((await check(probe, file("reparents.ts", "Object.setPrototypeOf(Array.prototype, Object.create(Object.prototype, { evil: { value: 1, enumerable: true } }));")))!.reason).toStartWith("its top level (or a package it imports) added or replaced Array.prototype's prototype");
      expect((await check(probe, file("getter.ts", 'Object.defineProperty(Object.prototype, "toString", { get() { throw new Error("boom getter"); }, configurable: true });')))!.reason).toStartWith("its top level (or a package it imports) added or replaced Object.prototype.toString");
      // A method added to Array.prototype as polyfills add them (not enumerable), or a key of an object of its own: loaded.
      expect(await check(probe, file("own-keys.ts", 'Object.defineProperty(Array.prototype, "last", { value() { return this[this.length - 1]; }, configurable: true });\nconst config: Record<string, unknown> = {};\nconfig.debug = true;'))).toBeNull();
      // Nothing reached this thread.
      expect("debug" in {}).toBe(false);
    } finally {
      await probe.close();
    }
  });

  test("a file refused in a worker earlier trials passed in is tried again in a new one: what an earlier top level left running that no check sees (a child's callback) never becomes another file's remembered verdict (tester)", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 1000 });
    try {
      // Its child's callback holds the worker's thread 3 s, 300 ms after this file passed.
      const defers = file("defers-child.ts", 'import { execFile } from "node:child_process";\nexecFile("sleep", ["0.3"], () => { const t = Date.now(); while (Date.now() - t < 3000) {} });');
      expect(await check(probe, defers)).toBeNull();
      const innocent = file("innocent.ts", `${mark("innocent.mark")}\nawait Bun.sleep(500);`);
      expect(await check(probe, innocent)).toBeNull();
      // Tried twice at most (the first time perhaps held by the callback), and passed.
      expect(marks("innocent.mark")).toBeGreaterThanOrEqual(1);
      expect(marks("innocent.mark")).toBeLessThanOrEqual(2);
    } finally {
      await probe.close();
    }
  });

  test("a top level that allocates without end is stopped at the memory limit, as a handler is", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 20_000, memoryLimitMb: 64 });
    try {
      const hog = file("hog.ts", "const rows: number[][] = [];\nfor (;;) rows.push(new Array(1_000_000).fill(1));");
      const verdict = (await check(probe, hog))!;
      expect(verdict.code).toBe("import_failed");
      expect(verdict.reason).toContain("grew past the memory limit of 64 MiB");
      // The probe goes on with a new worker.
      const after = file("after-hog.ts", mark("after-hog.mark"));
      expect(await check(probe, after)).toBeNull();
    } finally {
      await probe.close();
    }
  });

  test("a file that throws, or signals or aborts the process at its top level, is refused with its error: the main thread never runs it", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 2000 });
    try {
      const throws = file("throws.ts", 'throw new Error("broken at the top");');
      // Line 2 of the text: the import line comes first.
      // What it said is for the server's log only (detail): a client reads its class.
      expect(await check(probe, throws)).toEqual({ code: "import_failed", reason: `it threw while loading: Error${UNSAID}`, detail: "it threw while loading: broken at the top", line: 2, column: expect.any(Number) });
      const kills = file("kills.ts", 'process.kill(process.pid, "SIGTERM");');
      expect((await check(probe, kills))!.reason).toContain("would signal the docket process");
      const aborts = file("aborts.ts", "process.abort();");
      expect((await check(probe, aborts))!.reason).toContain("process.abort() would end the docket process");
      const broken = file("broken.ts", "const = ;");
      expect(await check(probe, broken)).toMatchObject({ code: "import_failed", reason: expect.stringContaining("syntax error"), line: 2 });
    } finally {
      await probe.close();
    }
  });

  // Under `bun test` a worker's own process.on("uncaughtException") never runs (see pool.test.ts):
  // this one runs the probe in a plain `bun` process and reads what it prints.
  test("an error a top level leaves uncaught refuses the file (tried again next time); one file's leftovers never reach the next file's trial", async () => {
    const rejects = file("rejects.ts", `${mark("rejects.mark")}\nPromise.reject(new Error("forgot to await this"));\nawait Bun.sleep(30);\nfor (;;) {}`);
    const leaves = file("leaves.ts", 'setInterval(() => void Promise.reject(new Error("refresh failed")), 5);\nawait Bun.sleep(20);');
    const good = file("good-after.ts", "await Bun.sleep(60);");
    // A plain rejection, reported only after the import itself finished.
    const plain = file("plain-reject.ts", 'Promise.reject(new Error("always"));');
    const script = join(dir, "uncaught-probe.ts");
    writeFileSync(
      script,
      `import { createLoadProbe } from ${JSON.stringify(new URL("../../runtime/worker/load-probe.ts", import.meta.url).pathname)};
import { DEFAULT_WORKER_URL } from ${JSON.stringify(new URL("../../runtime/worker/pool.ts", import.meta.url).pathname)};
const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 500 });
const files = ${JSON.stringify([rejects, rejects, leaves, good, plain])};
const verdicts = [];
for (const f of files) verdicts.push(await probe.check({ file: f.path, text: f.text, version: f.version, modules: [{ path: f.path, text: f.text, imports: [], key: f.version, served: f.text }], commonJs: false }));
await probe.close();
console.log(JSON.stringify(verdicts));
`,
    );
    const child = Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const [first, again, , afterLeftovers, plainRejection] = JSON.parse(stdout);
    expect(plainRejection?.reason).toContain("left an error uncaught (Error)");
    expect(plainRejection?.reason).not.toContain("always");
    expect(plainRejection?.detail).toContain("left an error uncaught (Error: always)");
    expect(first.reason).toContain("left an error uncaught");
    expect(first.reason).not.toContain("forgot to await this");
    expect(first.detail).toContain("forgot to await this");
    // Not kept: the same text is tried again (the error may have come from elsewhere).
    expect(again.reason).toContain("left an error uncaught");
    expect(marks("rejects.mark")).toBe(2);
    // The file after one that left a rejecting timer behind is tried in a worker of its own.
    expect(afterLeftovers).toBeNull();
  });

  test("the trial runs the text it is given, whatever is on disk: a save racing the trial cannot slip a loop past it", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 300 });
    try {
      // On disk a text that loops; the text read (and to be imported) is a good one.
      const racing = file("racing.ts", "for (;;) {}");
      const good = source(mark("racing-good.mark"));
      expect(await probe.check(sourcesOf(racing.path, good))).toBeNull();
      expect(marks("racing-good.mark")).toBe(1);
      // And the other way round: on disk a good text, the text read loops.
      const calm = file("calm.ts", mark("calm.mark"));
      const looping = source("for (;;) {}");
      expect(await probe.check(sourcesOf(calm.path, looping))).toMatchObject({ code: "load_timeout" });
      expect(marks("calm.mark")).toBe(0);
    } finally {
      await probe.close();
    }
  });

  test("the data a file imports (20 MB of JSON) is handed over and parsed before its top level is timed: it loads within a load time far shorter than that takes (tester B)", async () => {
    registerDocketModules();
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 300 });
    try {
      const { sources } = await bigDataFile("big-data", mark("big-data.mark"));
      expect(sources.modules.some((module) => module.data === "json" && module.served.length > 20_000_000)).toBe(true);
      expect(await probe.check(sources)).toBeNull();
      expect(marks("big-data.mark")).toBe(1);
      // Its top level is still timed: one that loops beside the same data is refused as before.
      const looping = await bigDataFile("big-data-loop", `${mark("big-data-loop.mark")}\nfor (;;) {}`);
      const verdict = (await probe.check(looping.sources))!;
      expect(verdict.code).toBe("load_timeout");
      expect(verdict.reason).toContain("did not finish loading within 300 ms when docket tried it in a worker first (a synchronous loop or slow work at its top level");
      // Refused in the worker the first file passed in, then in a new one: its own verdict.
      expect(marks("big-data-loop.mark")).toBe(2);
    } finally {
      await probe.close();
    }
  });

  test("a trial whose texts could not even be handed to its worker in time says so — the machine is busy, nothing of the file ran — not that its top level loops (tester B)", async () => {
    registerDocketModules();
    // No time at all per MiB: 20 MB of JSON cannot cross over and be parsed within 1 ms.
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 1, prepareMsPerMib: 0 });
    try {
      const { sources } = await bigDataFile("big-busy", mark("big-busy.mark"));
      const verdict = (await probe.check(sources))!;
      expect(verdict.code).toBe("load_timeout");
      expect(verdict.reason).toMatch(/could not hand the file and the \d+ MiB of text and data it imports to a worker \(and parse that data\) within 1 ms/);
      expect(verdict.reason).toContain("nothing of the file ran");
      expect(verdict.reason).not.toContain("synchronous loop");
      expect(marks("big-busy.mark")).toBe(0);
    } finally {
      await probe.close();
    }
  });

  test("a refused trial's worker ends with it, with what its top level left running; close() refuses a trial in progress and every later one", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 5000 });
    const ticking = file("ticking.ts", `${mark("tick.mark")}\nsetInterval(() => { ${mark("tick.mark")} }, 5);`);
    expect(await check(probe, ticking)).toMatchObject({ reason: expect.stringContaining("its top level left an interval running (setInterval at line 3)") });
    const stopped = marks("tick.mark");
    expect(stopped).toBeGreaterThanOrEqual(1);
    await Bun.sleep(100);
    expect(marks("tick.mark")).toBe(stopped);

    const slow = file("slow.ts", "await new Promise(() => {});");
    const pending = check(probe, slow);
    await Bun.sleep(100);
    await probe.close();
    // Closing (the server stops) refuses what was being tried: untried, nothing reaches the main thread.
    expect(await pending).toMatchObject({ code: "import_failed", reason: expect.stringContaining("the server is stopping") });
    const late = file("late.ts", mark("late.mark"));
    expect(await check(probe, late)).toMatchObject({ reason: expect.stringContaining("the server is stopping") });
    expect(marks("late.mark")).toBe(0);
  });

  test("a timer the file's own top level leaves pending is refused (it would run later on the main thread); one due soon is waited for and tried, a package's is not the file's", async () => {
    registerDocketModules();
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 1000 });
    try {
      const later = file("timer-later.ts", "setTimeout(() => { for (;;) {} }, 2000);");
      expect(await check(probe, later)).toEqual({ code: "import_failed", reason: expect.stringContaining("its top level left a timer running (setTimeout at line 2)"), line: 2, column: null });
      expect((await check(probe, later))!.reason).toContain("it would run later on docket's main thread (in a server, the thread that serves every client), where nothing can stop it");
      const unrefd = file("timer-unref.ts", "setInterval(() => {}, 60_000).unref();");
      expect((await check(probe, unrefd))!.reason).toContain("left an interval running (setInterval at line 2)");
      const cleared = file("timer-cleared.ts", "const t = setTimeout(() => {}, 5000);\nclearTimeout(t);\nconst i = setInterval(() => {}, 5000);\nclearInterval(i);");
      expect(await check(probe, cleared)).toBeNull();
      // Cleared by number or by close(); a timeout that only guards top-level work that finished.
      const otherwise = file(
        "timer-otherwise.ts",
        [
          "const id = +setTimeout(() => {}, 5000);",
          "clearTimeout(id);",
          "setTimeout(() => {}, 5000).close();",
          'await fetch("data:text/plain,hi", { signal: AbortSignal.timeout(5000) });',
          "await Promise.race([Promise.resolve(1), Bun.sleep(5000)]);",
        ].join("\n"),
      );
      expect(await check(probe, otherwise)).toBeNull();
      const soon = file("timer-soon.ts", `setTimeout(() => { ${mark("soon.mark")} }, 30);`);
      expect(await check(probe, soon)).toBeNull();
      expect(marks("soon.mark")).toBe(1);
      // What a timer due soon runs is part of the trial: a loop there is stopped with it.
      const soonLoop = file("timer-soon-loop.ts", "setTimeout(() => { for (;;) {} }, 30);");
      expect(await check(probe, soonLoop)).toMatchObject({ code: "load_timeout" });

      // Deferred other ways, or with the stack hidden: refused all the same.
      for (const [name, top, kind] of [
        // (Bun's own promise timer calls setTimeout: which of the two names it is does not matter.)
        ["timer-promises.ts", 'import { setTimeout as wait } from "node:timers/promises";\nwait(2000).then(() => { for (;;) {} });', "setTimeout"],
        ["timer-bun-sleep.ts", "Bun.sleep(2000).then(() => { for (;;) {} });", "Bun.sleep"],
        ["timer-signal.ts", 'AbortSignal.timeout(2000).addEventListener("abort", () => { for (;;) {} });', "AbortSignal.timeout"],
        ["timer-no-stack.ts", "Error.stackTraceLimit = 0;\nError.prepareStackTrace = () => \"\";\nsetTimeout(() => { for (;;) {} }, 2000);", "setTimeout"],
        ["timer-eval.ts", 'eval("setTimeout(() => { for (;;) {} }, 2000)");', "setTimeout"],
      ] as const) {
        expect((await check(probe, file(name, top)))?.reason).toMatch(new RegExp(`left a timer running \\(${kind.replace(/[.()]/g, "\\$&")}.* at line ${name === "timer-no-stack.ts" ? 4 : name === "timer-promises.ts" ? 3 : name === "timer-eval.ts" ? "\\d+" : 2}\\)`));
      }
      writeFileSync(join(dir, "_deferred.ts"), "export const go = () => setTimeout(() => { for (;;) {} }, 2000);\n");
      const computed = file("timer-computed.ts", 'const name = "_deferred";\nconst { go } = await import(`./${name}.ts`);\ngo();');
      // A module imported by a computed name never runs at all: the runtime refuses it (docs/containment.md, "Loading").
      expect((await check(probe, computed))?.reason).toContain(`docket refused to load ${join(dir, "_deferred.ts")} from disk`);

      // In a helper: named with its line. In a package: not the file's own code, and let be.
      mkdirSync(join(dir, "node_modules", "ticker"), { recursive: true });
      writeFileSync(join(dir, "node_modules", "ticker", "package.json"), '{"name":"ticker","type":"module","main":"index.js"}');
      writeFileSync(join(dir, "node_modules", "ticker", "index.js"), "export const ticker = setInterval(() => {}, 60_000);\n");
      writeFileSync(join(dir, "_poller.ts"), "export const started = true;\n\nsetInterval(() => {}, 1000);\n");
      // A package linked into node_modules (npm install ./vendor/linked, a workspace) runs from its
      // own folder, outside node_modules: still a package's code (tester S), scoped or not.
      for (const [pkg, link] of [["linked", join(dir, "node_modules", "linked")], ["scoped", join(dir, "node_modules", "@team", "scoped")]] as const) {
        mkdirSync(join(dir, "vendor", pkg), { recursive: true });
        writeFileSync(join(dir, "vendor", pkg, "package.json"), `{"name":"${pkg}","type":"module","main":"index.js"}`);
        writeFileSync(join(dir, "vendor", pkg, "index.js"), "const cache = new Map();\nsetInterval(() => cache.clear(), 60_000).unref();\nexport const get = (k) => cache.get(k);\n");
        mkdirSync(join(link, ".."), { recursive: true });
        symlinkSync(join(dir, "vendor", pkg), link);
      }
      writeFileSync(join(dir, "vendor", "own.ts"), "setInterval(() => {}, 60_000);\n");
      for (const [name, top, expected] of [
        ["uses-poller.ts", 'import "./_poller.ts";', "left an interval running (setInterval in _poller.ts line 3)"],
        ["uses-ticker.ts", 'import { ticker } from "ticker";\nconsole.log(typeof ticker);', null],
        ["uses-linked.ts", 'import { get } from "linked";\nimport { get as other } from "@team/scoped";\nconsole.log(get("x"), other("y"));', null],
        // A folder npm linked is a package's however it is imported (the stack names only the real path).
        ["uses-vendor.ts", 'import { get } from "./vendor/linked/index.js";\nconsole.log(get("x"));', null],
        // A folder beside it that nothing links is the file's own code: its timer is refused.
        ["uses-own.ts", 'import "./vendor/own.ts";', "left an interval running (setInterval in vendor/own.ts line 1)"],
      ] as const) {
        const written = file(name, top);
        const verdict = await probe.check(await readSources(written.path, written.text));
        if (expected === null) expect(verdict).toBeNull();
        else expect(verdict).toEqual({ code: "import_failed", reason: expect.stringContaining(expected), line: null, column: null });
      }
    } finally {
      await probe.close();
    }
  });

  test("other work a top level leaves behind is refused too: an immediate that reschedules itself, a server, a process listener; stopped or removed before the top level ends, it is fine", async () => {
    registerDocketModules();
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 1000 });
    try {
      for (const [name, top, expected] of [
        ["immediate-spin.ts", "let n = 0;\nfunction spin() { for (let i = 0; i < 1e5; i++) n++; setImmediate(spin); }\nspin();", "left work scheduled (setImmediate at line 3)"],
        ["server-bun.ts", 'Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hi") });', "left a server listening (Bun.serve at line 2)"],
        ["server-http.ts", 'import { createServer } from "node:http";\ncreateServer(() => {}).listen(0, "127.0.0.1");', "left a server listening (http server.listen at line 3)"],
        ["process-listener.ts", 'process.on("SIGTERM", () => { for (;;) {} });', 'left a listener on process (process.on("SIGTERM") at line 2)'],
        ["global-listener.ts", 'addEventListener("unhandledrejection", () => {});', 'left a listener on globalThis (globalThis.addEventListener("unhandledrejection") at line 2)'],
        // Started from a callback the runtime calls (its frame, not the file's, is the caller's), or from a microtask with no frame of the file at all.
        ["sleep-idiom.ts", "new Promise((r) => setTimeout(r, 1000)).then(() => { for (;;) {} });", "left a timer running (setTimeout at line 2)"],
        ["foreach-timer.ts", "[1].forEach(() => setTimeout(() => { for (;;) {} }, 2000));", "left a timer running (setTimeout at line 2)"],
        ["foreach-interval.ts", "[1].forEach(() => setInterval(() => {}, 500));", "left an interval running (setInterval at line 2)"],
        ["microtask-timer.ts", "queueMicrotask(() => setTimeout(() => { for (;;) {} }, 2000));", "left a timer running (setTimeout"],
        ["then-timer.ts", "Promise.resolve().then(() => setTimeout(() => { for (;;) {} }, 2000));", "left a timer running (setTimeout"],
        ["foreach-serve.ts", '[1].forEach(() => Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hi") }));', "left a server listening (Bun.serve at line 2)"],
        ["foreach-listener.ts", '[1].forEach(() => process.on("SIGUSR2", () => {}));', 'left a listener on process (process.on("SIGUSR2") at line 2)'],
      ] as const) {
        const verdict = await check(probe, file(name, top));
        expect({ name, reason: verdict?.reason }).toEqual({ name, reason: expect.stringContaining(expected) });
        expect(verdict!.reason).toContain("so docket did not import it; start it in the handler (and stop it when ctx.signal aborts), or ");
      }
      const undone = file(
        "undone.ts",
        [
          'import { createServer } from "node:http";',
          'Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hi") }).stop();',
          "const server = createServer(() => {});",
          'server.listen(0, "127.0.0.1");',
          "server.close();",
          "const onTerm = () => {};",
          'process.on("SIGTERM", onTerm);',
          'process.off("SIGTERM", onTerm);',
          'process.on("SIGUSR2", () => {});',
          'process.removeAllListeners("SIGUSR2");',
          "let once = 0;",
          "setImmediate(() => once++);",
          // Gone by themselves: one-time listeners that fired, one removed through its signal.
          'process.once("t-once", () => {});',
          'process.emit("t-once");',
          'addEventListener("x-once", () => {}, { once: true });',
          'dispatchEvent(new Event("x-once"));',
          "const ac = new AbortController();",
          'addEventListener("x-signal", () => {}, { signal: ac.signal });',
          "ac.abort();",
        ].join("\n"),
      );
      expect(await check(probe, undone)).toBeNull();
    } finally {
      await probe.close();
    }
  });

  test("a top level waiting in execSync is stopped at the load time with the child it started: neither holds the next trial or the probe's close", async () => {
    const probe = createLoadProbe({ workerUrl: DEFAULT_WORKER_URL, timeoutMs: 300 });
    const pidFile = join(dir, "blocked-child.pid");
    const blocked = file("blocked.ts", `import { execSync } from "node:child_process";\nexecSync(\`sh -c 'echo $$ > ${pidFile}; exec sleep 30'\`);`);
    expect(await check(probe, blocked)).toMatchObject({ code: "load_timeout" });
    const pid = Number(readFileSync(pidFile, "utf8"));
    // Ended: gone, or a zombie its ended parent shell left to init.
    const alive = () => {
      try {
        return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 100 && alive(); i++) await Bun.sleep(10);
    expect(alive()).toBe(false);
    const next = file("after-blocked.ts", mark("after-blocked.mark"));
    expect(await check(probe, next)).toBeNull();
    await probe.close();
  });
});

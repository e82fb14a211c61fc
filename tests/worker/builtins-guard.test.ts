// The main thread's guard of the language's own built-ins (_pristine-builtins.ts): what a file's
// code replaced there is put back, the iterators its own look walks with included.
import { expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtinsGuard } from "../../runtime/worker/_pristine-builtins.ts";

test("puts back replaced and removed core built-ins and hook keys added to core prototypes, even with the iterators replaced; leaves what real packages patch (checking tester, session 44)", () => {
  const guard = builtinsGuard();
  const parse = JSON.parse;
  const mapIterator = Object.getPrototypeOf(new Map()[Symbol.iterator]());
  const arrayIterator = Object.getPrototypeOf([][Symbol.iterator]());
  const mapNext = mapIterator.next;
  const arrayNext = arrayIterator.next;
  const random = Math.random;
  const getHours = Date.prototype.getHours;
  try {
    JSON.parse = () => ({});
    delete (Date.prototype as any).getHours;
    Object.defineProperty(Array.prototype, "toJSON", { value: () => ["pwned"], configurable: true, writable: true });
    Math.random = () => 0.5;
    mapIterator.next = () => ({ done: true, value: undefined });
    arrayIterator.next = () => ({ done: true, value: undefined });
    const found = guard.takeBack();
    // Put back before anything else here walks an array.
    expect(arrayIterator.next).toBe(arrayNext);
    expect(mapIterator.next).toBe(mapNext);
    expect(JSON.parse).toBe(parse);
    expect(Date.prototype.getHours).toBe(getHours);
    expect(Object.hasOwn(Array.prototype, "toJSON")).toBe(false);
    expect(found!.kept).toEqual([]);
    expect([...found!.changed].sort()).toEqual(["%ArrayIteratorPrototype%.next", "%MapIteratorPrototype%.next", "Array.prototype.toJSON", "Date.prototype.getHours", "JSON.parse"]);
    // A seeded Math.random is a package's to make: left.
    expect(Math.random).not.toBe(random);
    expect(guard.takeBack()).toBeNull();
  } finally {
    JSON.parse = parse;
    mapIterator.next = mapNext;
    arrayIterator.next = arrayNext;
    Math.random = random;
    Date.prototype.getHours = getHours;
    delete (Array.prototype as any).toJSON;
  }
});

test("is not blinded or stopped by what a file puts in its way: a throwing getter on Object.prototype, a setter on Array.prototype[0]; and guards the global bindings and the constructors' own methods (third checking tester, session 44)", () => {
  // In a process of its own: an index setter on Array.prototype, even for a moment, breaks what
  // the runtime builds meanwhile for the rest of the process.
  const script = `
    import { builtinsGuard } from ${JSON.stringify(join(import.meta.dir, "../../runtime/worker/_pristine-builtins.ts"))};
    const guard = builtinsGuard();
    const json = globalThis.JSON, parse = JSON.parse, isInteger = Number.isInteger;
    Object.defineProperty(Object.prototype, "get", { get() { throw new Error("in the way"); }, configurable: true });
    Object.defineProperty(Array.prototype, "0", { configurable: true, get() { return undefined; }, set() {} });
    JSON.parse = () => ({});
    Number.isInteger = () => false;
    globalThis.JSON = { parse: () => ({ pwned: true }), stringify: json.stringify };
    const found = guard.takeBack();
    delete Object.prototype.get;
    const restored = globalThis.JSON === json && json.parse === parse && Number.isInteger === isInteger && !Object.hasOwn(Array.prototype, "0");
    process.stdout.write(json.stringify({ restored, changed: [...found.changed].sort(), kept: found.kept }));
  `;
  const file = join(tmpdir(), `docket-guard-${process.pid}.ts`);
  writeFileSync(file, script);
  try {
    const ran = Bun.spawnSync([process.execPath, file], { stdout: "pipe", stderr: "pipe" });
    expect(ran.stderr.toString()).toBe("");
    expect(JSON.parse(ran.stdout.toString())).toEqual({ restored: true, changed: ["Array.prototype.0", "JSON.parse", "Number.isInteger", "globalThis.JSON"], kept: [] });
  } finally {
    rmSync(file, { force: true });
  }
});

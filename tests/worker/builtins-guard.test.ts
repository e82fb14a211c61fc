// The main thread's guard of the language's own built-ins (_pristine-builtins.ts): what a file's
// code replaced there is put back, the iterators its own look walks with included.
import { expect, test } from "bun:test";
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

import { describe, expect, test } from "bun:test";
import { canonicalHash, canonicalJson } from "../../runtime/execution/canonical-json.ts";

// The text run_id idempotency and the direct-call cache compare inputs by (docs/protocol.md).
describe("canonicalJson", () => {
  test("equal values in any key order have one text, at every depth and inside arrays", () => {
    expect(canonicalJson({ b: 1, a: { d: [{ y: 2, x: 1 }], c: null } })).toBe('{"a":{"c":null,"d":[{"x":1,"y":2}]},"b":1}');
    expect(canonicalHash({ b: 1, a: 2 })).toBe(canonicalHash({ a: 2, b: 1 }));
  });

  test("a member named __proto__ is a member like any other: inputs that differ under it differ", () => {
    const one = JSON.parse('{"q":1,"__proto__":{"acct":"alice"}}');
    const other = JSON.parse('{"q":1,"__proto__":{"acct":"bob"}}');
    expect(canonicalJson(one)).toBe('{"__proto__":{"acct":"alice"},"q":1}');
    expect(canonicalHash(one)).not.toBe(canonicalHash(other));
    expect(canonicalHash(one)).not.toBe(canonicalHash({ q: 1 }));
  });

  test("an object with a member named constructor is still sorted", () => {
    expect(canonicalJson(JSON.parse('{"constructor":1,"b":{"z":1,"a":2},"a":1}'))).toBe('{"a":1,"b":{"a":2,"z":1},"constructor":1}');
    expect(canonicalHash(JSON.parse('{"constructor":1,"b":1,"a":1}'))).toBe(canonicalHash(JSON.parse('{"a":1,"b":1,"constructor":1}')));
  });

  test("values that are not plain objects are written as JSON writes them", () => {
    expect(canonicalJson({ when: new Date(0), gone: undefined, list: [undefined] })).toBe('{"list":[null],"when":"1970-01-01T00:00:00.000Z"}');
    expect(canonicalJson(undefined)).toBe("null");
  });
});

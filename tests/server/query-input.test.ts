import { describe, expect, test } from "bun:test";
import { holdsSecret, inputFromQuery, queryRefusal, readWholeNumber } from "../../runtime/server/query-input.ts";
import { failureAnswer, statusOf } from "../../runtime/server/errors.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";

const schema = {
  type: "object",
  properties: {
    n: { type: "number" },
    i: { type: "integer" },
    b: { type: "boolean" },
    s: { type: "string" },
    tags: { type: "array", items: { type: "string" } },
    counts: { type: "array", items: { type: "integer" } },
    options: { type: "object", properties: { deep: { type: "boolean" } } },
    maybe: { anyOf: [{ type: "number" }, { type: "null" }] },
    either: { anyOf: [{ type: "string" }, { type: "number" }] },
    mode: { enum: ["fast", "slow"] },
  },
};

const coerce = (query: string) => inputFromQuery(new URLSearchParams(query), schema);

describe("inputFromQuery", () => {
  test("inputFromQuery coerces numbers, integers and booleans by the schema", () => {
    expect(coerce("n=1.5&i=42&b=true&s=7")).toEqual({ n: 1.5, i: 42, b: true, s: "7" });
    expect(coerce("b=0&i=-3&n=1e3")).toEqual({ b: false, i: -3, n: 1000 });
  });

  test("inputFromQuery leaves what cannot be coerced as text, for validation to name", () => {
    expect(coerce("n=ten&i=1.5&b=yes")).toEqual({ n: "ten", i: "1.5", b: "yes" });
  });

  // Form explode, as openapi.json publishes an array: no comma list, no JSON array (hostile tester).
  test("inputFromQuery makes an array element of each occurrence of its key, exactly as sent", () => {
    expect(coerce("tags=a&tags=b")).toEqual({ tags: ["a", "b"] });
    expect(coerce("tags=a,b,c")).toEqual({ tags: ["a,b,c"] });
    expect(coerce("counts=1&counts=2&tags=")).toEqual({ counts: [1, 2], tags: [""] });
    expect(coerce("counts=[3,4]&tags=[x]")).toEqual({ counts: ["[3,4]"], tags: ["[x]"] });
  });

  test("inputFromQuery converts a tuple's elements by the schema of their place, the rest by items", () => {
    const tuple = { properties: { t: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: { type: "boolean" } } } };
    expect(inputFromQuery(new URLSearchParams("t=1&t=2&t=true&t=0"), tuple)).toEqual({ t: ["1", 2, true, false] });
  });

  test("inputFromQuery reads objects as JSON, unions by their members, enums as text", () => {
    expect(coerce('options={"deep":true}')).toEqual({ options: { deep: true } });
    expect(coerce("maybe=null&either=5&mode=fast")).toEqual({ maybe: null, either: "5", mode: "fast" });
    expect(coerce("maybe=2")).toEqual({ maybe: 2 });
  });

  test("inputFromQuery takes an integer in decimal digits only: 1e1, 1.0 and +5 stay text for validation to name", () => {
    expect(coerce("i=-7&counts=3&counts=04")).toEqual({ i: -7, counts: [3, 4] });
    expect(coerce("i=1e1")).toEqual({ i: "1e1" });
    expect(coerce("i=1.0")).toEqual({ i: "1.0" });
    expect(coerce("i=%2B5")).toEqual({ i: "+5" });
  });

  test("inputFromQuery keeps a key the schema does not name as text, and a repeated scalar as an array", () => {
    expect(coerce("other=1&s=a&s=b")).toEqual({ other: "1", s: ["a", "b"] });
  });

  test("inputFromQuery sets __proto__ as an own member, as JSON.parse does, for validation to name, and changes no prototype", () => {
    const input = coerce("__proto__=1&n=2");
    expect(Object.keys(input)).toEqual(["__proto__", "n"]);
    expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
    expect(JSON.stringify(input)).toBe(JSON.stringify(JSON.parse('{"__proto__":"1","n":2}')));
  });
});

describe("readWholeNumber", () => {
  test("readWholeNumber takes decimal digits up to 2^53 - 1 and refuses every other text naming the parameter", () => {
    expect(readWholeNumber("after", "0")).toEqual({ ok: true, value: 0 });
    expect(readWholeNumber("after", "007")).toEqual({ ok: true, value: 7 });
    expect(readWholeNumber("after", String(Number.MAX_SAFE_INTEGER))).toEqual({ ok: true, value: Number.MAX_SAFE_INTEGER });
    for (const raw of ["1e1", "1.0", "+5", " 5", "5 ", "-1", "0x5", "", "٣", "9007199254740992"]) {
      const read = readWholeNumber("after", raw);
      expect(read.ok ? raw : read.refusal.context).toEqual({ parameter: "after" });
      expect(read.ok ? "" : read.refusal.message).toContain(`after must be`);
    }
  });

  test("queryRefusal holds every non-negative integer parameter of a schema to readWholeNumber, and no other", () => {
    const schema = { properties: { after: { type: "integer", minimum: 0 }, i: { type: "integer" }, n: { type: "number", minimum: 0 } } };
    expect(queryRefusal(new URLSearchParams("after=1e1"), schema)?.message).toBe('after must be a non-negative whole number written in decimal digits (like 0 or 42), got "1e1".');
    expect(queryRefusal(new URLSearchParams("after=12&i=1e1&n=1e1&other=x"), schema)).toBeNull();
  });

  test("queryRefusal refuses a field that holds a secret, by name alone, before any other check", () => {
    const schema = { properties: { after: { type: "integer", minimum: 0 }, token: { type: "string", "x-docket-sensitive": true } } };
    const refused = queryRefusal(new URLSearchParams("after=1e1&token=hunter2hunter2"), schema);
    expect(refused?.context).toEqual({ parameter: "token", reason: "sensitive_in_query" });
    expect(JSON.stringify(refused)).not.toContain("hunter2");
    expect(queryRefusal(new URLSearchParams("after=3"), schema)).toBeNull();
  });

  test("holdsSecret finds a secret in a field, under it, in the keys a schema does not declare and in any branch of a union", () => {
    const secret = { type: "string", "x-docket-sensitive": true };
    const schema = {
      properties: { plain: { type: "string" }, password: { type: "string", format: "password" }, nested: { type: "object", properties: { key: secret } }, list: { type: "array", items: secret } },
    };
    expect(["plain", "password", "nested", "list", "other"].filter((key) => holdsSecret(schema, key))).toEqual(["password", "nested", "list"]);
    expect(holdsSecret({ properties: { a: { type: "string" } }, additionalProperties: secret }, "b")).toBe(true);
    expect(holdsSecret({ properties: { a: { type: "string" } }, additionalProperties: secret }, "a")).toBe(false);
    expect(holdsSecret({ anyOf: [{ properties: { a: { type: "string" } } }, { properties: { a: secret } }] }, "a")).toBe(true);
    expect(holdsSecret({ type: "object", writeOnly: true }, "anything")).toBe(true);
  });

  test("queryRefusal holds a bounded parameter to its range, in one sentence whatever was wrong with its text", () => {
    const schema = { properties: { limit: { type: "integer", minimum: 1, maximum: 1000 }, n: { type: "integer", exclusiveMinimum: 0, exclusiveMaximum: 10 }, at: { type: "integer", minimum: 2 } } };
    const refusal = (query: string) => queryRefusal(new URLSearchParams(query), schema)?.message ?? null;
    for (const raw of ["-1", "0", "1001", "1e1", "9007199254740992"]) {
      expect(refusal(`limit=${encodeURIComponent(raw)}`)).toBe(`limit must be a whole number from 1 to 1000 written in decimal digits, got ${JSON.stringify(raw)}.`);
    }
    expect(refusal("limit=1&n=9&at=2")).toBeNull();
    expect(refusal("limit=1000&n=1&at=9007199254740991")).toBeNull();
    expect(refusal("n=10")).toBe('n must be a whole number from 1 to 9 written in decimal digits, got "10".');
    expect(refusal("at=1")).toBe('at must be a whole number of at least 2 written in decimal digits, got "1".');
    expect(refusal("at=9007199254740992")).toBe('at must be a whole number of at most 9007199254740991, got "9007199254740992".');
  });
});

describe("statusOf", () => {
  test("statusOf projects every plane code onto its one HTTP status; handler codes are 422", () => {
    expect(failureAnswer(buildFailure({ error_code: "capability_changed", stage: "run", message: "changed", retryability: "after_delay", request_id: "r-1", trace_id: "0".repeat(32) }), "r-1").headers.get("Retry-After")).toBe("1");
    const cases: Record<string, number> = {
      invalid_input: 400,
      not_runnable: 400,
      not_found: 404,
      run_id_conflict: 409,
      cancelled: 409,
      capacity: 429,
      internal: 500,
      unavailable: 503,
      interrupted: 503,
      // Raised by docket when a file changed between its load and the call: retried, not the capability's refusal (tester).
      capability_changed: 503,
      deadline_exceeded: 504,
      verification_failed: 422,
    };
    for (const [code, status] of Object.entries(cases)) expect(statusOf({ error_code: code })).toBe(status);
  });
});

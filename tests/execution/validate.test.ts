import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { checkValue } from "../../runtime/execution/validate.ts";

// A sensitive field's value never comes back in a validation message, whatever the check
// (docs/security.md): valibot quotes it as "but received …" for most checks, as ": Received …"
// for those that expect no one thing (email, url, uuid, isoDate, a custom check), and a custom
// message may quote it anywhere.
describe("checkValue", () => {
  const secret = "SUPERSECRETVALUE42";
  const schema = v.object({
    email: v.optional(v.pipe(v.string(), v.email())),
    url: v.optional(v.pipe(v.string(), v.url())),
    re: v.optional(v.pipe(v.string(), v.regex(/^tok_/))),
    custom: v.optional(v.pipe(v.string(), v.check((s) => s.startsWith("tok_"), (issue) => `"${String(issue.input)}" does not start with tok_`))),
    plain: v.optional(v.pipe(v.string(), v.email())),
  });
  const sensitive = (path: Array<string | number>) => path[0] !== "plain";

  test("a sensitive field's value is not quoted back by any check; a field that is not sensitive keeps valibot's message", () => {
    for (const field of ["email", "url", "re", "custom"]) {
      const checked = checkValue(schema, { [field]: secret }, "input", sensitive);
      expect(checked.ok).toBe(false);
      const message = (checked as { ok: false; problems: Array<{ path: string; message: string }> }).problems[0]!.message;
      expect({ field, message }).toEqual({ field, message: expect.not.stringContaining(secret) });
    }
    const email = checkValue(schema, { email: secret }, "input", sensitive) as { ok: false; problems: Array<{ path: string; message: string }> };
    expect(email.problems).toEqual([{ path: "input.email", message: "Invalid email (the value given is not shown: the field is sensitive)" }]);
    const custom = checkValue(schema, { custom: secret }, "input", sensitive) as { ok: false; problems: Array<{ message: string }> };
    expect(custom.problems[0]!.message).toBe('"[redacted]" does not start with tok_');
    const plain = checkValue(schema, { plain: secret }, "input", sensitive) as { ok: false; problems: Array<{ message: string }> };
    expect(plain.problems[0]!.message).toContain(secret);
  });
});

// valibot says of a value no object form of a union took "Expected Object but received Object":
// each form's problem is said instead, a sensitive field's value withheld there too (tester).
describe("checkValue of a union", () => {
  type Failed = { ok: false; problems: Array<{ path: string; message: string }> };
  const schema = v.object({ auth: v.union([v.object({ token: v.pipe(v.string(), v.minLength(40)) }), v.object({ user: v.string(), pin: v.number() })]) });

  test("a missing required field is said so, with a field given in its place that is close (a typo), at any depth (walkthrough tester)", () => {
    const typed = v.object({ text: v.string(), options: v.optional(v.object({ name: v.string(), nameless: v.optional(v.string()) })) });
    expect((checkValue(typed, { txt: "a" }, "input") as Failed).problems).toEqual([
      { path: "input.text", message: 'Missing required field "text"; it has "txt", which its schema does not declare: did you mean "text"?' },
    ]);
    expect((checkValue(typed, {}, "input") as Failed).problems).toEqual([{ path: "input.text", message: 'Missing required field "text".' }]);
    // A declared field near the missing one is not offered: it is there for itself.
    expect((checkValue(typed, { text: "a", options: { nmae: "x", nameless: "y", zzz: 1 } }, "input") as Failed).problems).toEqual([
      { path: "input.options.name", message: 'Missing required field "name"; it has "nmae", which its schema does not declare: did you mean "name"?' },
    ]);
    // A field present with the wrong type keeps valibot's message, which names the value.
    expect((checkValue(typed, { text: 3 }, "input") as Failed).problems[0]!.message).toBe("Invalid type: Expected string but received 3");
  });

  test("a value no object form takes names what each form lacked", () => {
    const checked = checkValue(schema, { auth: { c: 1 } }, "input") as Failed;
    expect(checked.problems).toEqual([
      {
        path: "input.auth",
        message:
          'it matches none of the forms its schema allows: input.auth.token: Missing required field "token".; or input.auth.user: Missing required field "user".; or input.auth.pin: Missing required field "pin".',
      },
    ]);
    expect(checked.problems[0]!.message).not.toContain("Expected Object but received Object");
    // A union valibot already names well is left as it says it.
    expect((checkValue(v.object({ n: v.union([v.string(), v.number()]) }), { n: true }, "input") as Failed).problems[0]!.message).toBe("Invalid type: Expected (string | number) but received true");
  });

  test("a sensitive field inside a form is not quoted back", () => {
    // A number where the token's string goes: no form takes it, and each is said.
    const secret = 918273645546372;
    const checked = checkValue(schema, { auth: { token: secret } }, "input", (path) => path.join(".") === "auth.token") as Failed;
    expect(checked.problems[0]!.message).toContain("input.auth.token: Invalid type: Expected string (the value given is not shown: the field is sensitive)");
    expect(checked.problems[0]!.message).not.toContain(String(secret));
    // One form that took the object: its own problem, at its own path, withheld the same.
    const short = checkValue(schema, { auth: { token: "tok_SUPERSECRET" } }, "input", (path) => path.join(".") === "auth.token") as Failed;
    expect(short.problems).toEqual([{ path: "input.auth.token", message: "Invalid length: Expected >=40 (the value given is not shown: the field is sensitive)" }]);
  });
});

// valibot's object schema asks `key in input`: on an ordinary object that finds Object.prototype's
// members, so a field named after one of them must be looked for among the value's own members.
describe("checkValue and fields named after Object.prototype's members", () => {
  const schema = v.object({
    name: v.optional(v.string()),
    toString: v.optional(v.string()),
    constructor: v.optional(v.number()),
    valueOf: v.optional(v.boolean()),
    hasOwnProperty: v.optional(v.string()),
    ["__proto__"]: v.optional(v.string()),
    email: v.optional(v.pipe(v.string(), v.email())),
    meta: v.optional(v.any()),
    rows: v.optional(v.array(v.object({ toString: v.optional(v.string()) }))),
  });
  type Failed = { ok: false; problems: Array<{ path: string; message: string }> };

  test("checkValue takes optional toString, constructor, valueOf, hasOwnProperty and __proto__ fields that are absent as absent, at every depth", () => {
    const checked = checkValue<Record<string, unknown>>(schema, JSON.parse('{"name": "n", "rows": [{}, {"toString": "t"}]}'), "input");
    expect(checked).toEqual({ ok: true, value: { name: "n", rows: [{}, { toString: "t" }] } });
    if (!checked.ok) return;
    expect(Object.keys(checked.value)).toEqual(["name", "rows"]);
    // The handler gets ordinary objects.
    expect(Object.getPrototypeOf(checked.value)).toBe(Object.prototype);
  });

  test("checkValue refuses such a field given with a wrong type, by its name", () => {
    const checked = checkValue(schema, JSON.parse('{"toString": 5, "constructor": "x", "rows": [{"toString": {}}]}'), "input") as Failed;
    expect(checked.problems).toEqual([
      { path: "input.toString", message: "Invalid type: Expected string but received 5" },
      { path: "input.constructor", message: 'Invalid type: Expected number but received "x"' },
      { path: "input.rows[0].toString", message: "Invalid type: Expected string but received Object" },
    ]);
  });

  test("checkValue keeps __proto__ in a JSON value a member like any other: nothing gains a prototype", () => {
    const checked = checkValue<{ meta: Record<string, unknown> }>(schema, JSON.parse('{"meta": {"__proto__": {"polluted": true}, "x": 1}}'), "input");
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    expect(Object.keys(checked.value.meta)).toEqual(["__proto__", "x"]);
    expect(Object.getPrototypeOf(checked.value.meta)).toBe(Object.prototype);
    expect(checked.value.meta.polluted).toBeUndefined();
    expect("polluted" in {}).toBe(false);
  });

  test("checkValue still withholds a sensitive field's value when it looks among own members", () => {
    const secret = "SUPERSECRETVALUE42";
    const checked = checkValue(schema, { email: secret }, "input", (path) => path[0] === "email") as Failed;
    expect(checked.problems).toEqual([{ path: "input.email", message: "Invalid email (the value given is not shown: the field is sensitive)" }]);
  });
});

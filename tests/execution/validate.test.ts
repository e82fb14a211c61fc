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

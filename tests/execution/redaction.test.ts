import { describe, expect, test } from "bun:test";
import { redact, REDACTED } from "../../runtime/execution/redaction.ts";
import { EDGE, harness } from "./_support/harness.ts";
import { flush } from "./_support/fake-pool.ts";

const SECRET = "s3cr3t-value-XYZ";

describe("redaction", () => {
  test("redact replaces values the schema marks, at any depth, never by field name", () => {
    const schema = {
      type: "object",
      properties: {
        password: { type: "string" },
        a: { type: "string", format: "password" },
        b: { type: "string", writeOnly: true },
        list: { type: "array", items: { type: "object", properties: { k: { type: "string", "x-docket-sensitive": true } } } },
        tuple: { type: "array", prefixItems: [{ type: "string" }, { type: "string", "x-docket-sensitive": true }] },
        maybe: { anyOf: [{ type: "string", "x-docket-sensitive": true }, { type: "null" }] },
        map: { type: "object", additionalProperties: { type: "string", format: "password" } },
      },
    };
    const out = redact(
      { password: "visible", a: SECRET, b: SECRET, list: [{ k: SECRET }, { k: SECRET }], tuple: ["plain", SECRET], maybe: SECRET, map: { x: SECRET } },
      schema,
    ) as any;
    expect(out.password).toBe("visible");
    expect(out.a).toBe(REDACTED);
    expect(out.b).toBe(REDACTED);
    expect(out.list).toEqual([{ k: REDACTED }, { k: REDACTED }]);
    expect(out.tuple).toEqual(["plain", REDACTED]);
    expect(out.maybe).toBe(REDACTED);
    expect(out.map).toEqual({ x: REDACTED });
    expect(redact({ maybe: null }, schema)).toEqual({ maybe: null });
  });

  test("a nested sensitive field never appears in any stored event, snapshot or listing, while the handler gets the real value", async () => {
    const h = harness();
    const input = { user: "ada", auth: { token: SECRET }, keys: [{ name: "one", key: SECRET }], maybe: SECRET };
    const { execution } = h.engine.start({ capability: "demo.secret", input }, EDGE);
    expect(JSON.stringify(execution)).not.toContain(SECRET);
    await flush();
    const task = h.pool.of(execution.id)!;
    expect(task.task.input).toEqual(input);
    task.emit({ type: "execution.log", data: { level: "info", message: "working for ada" } });
    task.succeed({});
    await flush();
    const everything = JSON.stringify([h.store.get(execution.id), h.store.list(), h.store.events(execution.id, 0, 1000)]);
    expect(everything).not.toContain(SECRET);
    expect(everything).toContain("ada");
    expect(h.store.get(execution.id)!.input).toEqual({ user: "ada", auth: { token: REDACTED }, keys: [{ name: "one", key: REDACTED }], maybe: REDACTED });
  });

  test("run_id idempotency compares redacted inputs: another secret is the same run, so no answer tells the secret (docs/security.md)", () => {
    const h = harness();
    const base = { user: "ada", auth: { token: "one" }, keys: [] };
    const first = h.engine.start({ capability: "demo.secret", input: base, run_id: "r" }, EDGE);
    const again = h.engine.start({ capability: "demo.secret", input: { ...base, auth: { token: "two" } }, run_id: "r" }, EDGE);
    expect(again).toMatchObject({ deduplicated: true, execution: { id: first.execution.id } });
    expect(() => h.engine.start({ capability: "demo.secret", input: { ...base, user: "bob" }, run_id: "r" }, EDGE)).toThrow(/run_id/);
  });
});

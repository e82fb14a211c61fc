import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { toCapabilityJsonSchema } from "../../runtime/capability/json-schema.ts";
import { sensitive } from "../../runtime/capability/sensitive.ts";
import { hasSensitive, holdsSensitive, redact, REDACTED, sensitivePaths } from "../../runtime/execution/redaction.ts";
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

  test("an object whose keys the schema marks (v.record(sensitive(v.string()), …)) is hidden whole when it has a key it does not declare; a path into it is sensitive (containment tester, session 47: keys served in the clear)", () => {
    const schema = toCapabilityJsonSchema(v.object({ keys: v.record(sensitive(v.string()), v.string()), plain: v.record(v.string(), v.string()) }), "input");
    const input = { keys: { sk_live_SUPERSECRET99: "prod" }, plain: { visible: "yes" } };
    expect(redact(input, schema)).toEqual({ keys: REDACTED, plain: { visible: "yes" } });
    // Nothing to hide in an empty record.
    expect(redact({ keys: {}, plain: {} }, schema)).toEqual({ keys: {}, plain: {} });
    expect(hasSensitive(schema)).toBe(true);
    expect(holdsSensitive(input, schema)).toBe(true);
    expect(sensitivePaths(input, schema)(["keys", "sk_live_SUPERSECRET99"])).toBe(true);
    expect(sensitivePaths(input, schema)(["plain", "visible"])).toBe(false);
    // A field an intersect's object declares beside such a record is published, not a secret key (checking tester, session 47).
    const both = toCapabilityJsonSchema(v.object({ at: v.intersect([v.object({ region: v.string() }), v.record(sensitive(v.string()), v.string())]) }), "input");
    expect(redact({ at: { region: "eu-west-1" } }, both)).toEqual({ at: { region: "eu-west-1" } });
    expect(redact({ at: { region: "eu-west-1", sk_live_KEY99: "x" } }, both)).toEqual({ at: REDACTED });
  });

  test("holdsSensitive is true only when a value was given at a place the schema marks, whatever the other values say", () => {
    const schema = {
      type: "object",
      properties: {
        note: { type: "string" },
        list: { type: "array", items: { type: "object", properties: { k: { type: "string", "x-docket-sensitive": true } } } },
        maybe: { anyOf: [{ type: "string", format: "password" }, { type: "null" }] },
      },
    };
    expect(holdsSensitive({ note: REDACTED }, schema)).toBe(false);
    expect(holdsSensitive({ note: "x", list: [{}], maybe: null }, schema)).toBe(false);
    expect(holdsSensitive({ list: [{}, { k: REDACTED }] }, schema)).toBe(true);
    expect(holdsSensitive({ maybe: REDACTED }, schema)).toBe(true);
    expect(holdsSensitive({ note: REDACTED }, { type: "object", properties: { note: { type: "string" } } })).toBe(false);
  });

  test("redact follows $ref: a secret inside v.lazy, and at every level of a recursive schema, is redacted", () => {
    type Node = { token: string; name: string; children: Node[] };
    const node: v.GenericSchema<Node> = v.object({ token: sensitive(v.string()), name: v.string(), children: v.array(v.lazy(() => node)) });
    const schema = toCapabilityJsonSchema(v.object({ tree: node, lazy: v.lazy(() => sensitive(v.string())), maybe: v.nullable(v.lazy(() => node)) }), "input");
    // The converter writes the recursion as a reference into $defs: what this test is about.
    expect(JSON.stringify(schema)).toContain('"$ref"');
    const leaf = (token: string): Node => ({ token, name: "leaf", children: [] });
    const input = { tree: { token: "level-one", name: "root", children: [{ token: "level-two", name: "mid", children: [leaf("level-three")] }] }, lazy: "lazy-secret", maybe: leaf("maybe-secret") };
    const out = redact(input, schema);
    expect(out).toEqual({
      tree: { token: REDACTED, name: "root", children: [{ token: REDACTED, name: "mid", children: [{ token: REDACTED, name: "leaf", children: [] }] }] },
      lazy: REDACTED,
      maybe: { token: REDACTED, name: "leaf", children: [] },
    });
    expect(hasSensitive({ type: "object", properties: { x: { $ref: "#/$defs/0" } } }, schema)).toBe(true);
    const inside = sensitivePaths(input, schema);
    expect(inside(["tree", "children", 0, "children", 0, "token"])).toBe(true);
    expect(inside(["tree", "children", 0, "name"])).toBe(false);
  });

  test("redact ends on a cycle of references, and still redacts what the cycle holds", () => {
    const schema = {
      type: "object",
      properties: { a: { $ref: "#/$defs/loop" }, self: { $ref: "#/properties/self" } },
      $defs: { loop: { anyOf: [{ $ref: "#/$defs/loop" }, { allOf: [{ $ref: "#/$defs/back" }] }] }, back: { anyOf: [{ $ref: "#/$defs/loop" }, { type: "string", "x-docket-sensitive": true }] } },
    };
    expect(redact({ a: "held-secret", self: "plain" }, schema)).toEqual({ a: REDACTED, self: "plain" });
    expect(hasSensitive(schema.properties.self, schema)).toBe(false);
  });

  test("redact reads a record's own entries: a key named like an Object method is its data", () => {
    const schema = toCapabilityJsonSchema(v.object({ map: v.record(v.string(), sensitive(v.string())) }), "input");
    expect(redact({ map: { constructor: "s1-secret", toString: "s2-secret" } }, schema)).toEqual({ map: { constructor: REDACTED, toString: REDACTED } });
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

import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { toCapabilityJsonSchema } from "../../runtime/capability/json-schema.ts";
import { sensitive } from "../../runtime/capability/sensitive.ts";
import { declaredOnly, droppedFieldText, undeclaredFields } from "../../runtime/execution/undeclared-fields.ts";

/** The fields the input's own check drops, as the engine asks: the given input, the checked one, the JSON Schema. */
function dropped(schema: v.GenericSchema, given: unknown, exact = false): string[] {
  return undeclaredFields(given, v.parse(schema, given), toCapabilityJsonSchema(schema, "input"), { exact });
}

describe("undeclaredFields", () => {
  type Node = { name: string; children: Node[] };
  const node: v.GenericSchema<Node> = v.object({ name: v.string(), children: v.array(v.lazy(() => node)) });

  test("undeclaredFields follows $ref: a misspelt field at any level of a recursive schema is found, with the field meant", () => {
    const schema = v.object({ tree: node });
    const given = { tree: { name: "root", children: [{ name: "mid", children: [{ name: "leaf", children: [], dryRun: true }] }] } };
    expect(dropped(schema, given)).toEqual(["tree.children.0.children.0.dryRun"]);
    expect(dropped(schema, { tree: { name: "root", children: [{ nme: "mid", name: "mid", children: [] }] } })).toEqual(["tree.children.0.nme"]);
    expect(droppedFieldText("tree.children.0.nme", toCapabilityJsonSchema(schema, "input"))).toBe('"tree.children.0.nme" (did you mean "name"?)');
  });

  test("undeclaredFields never names a member of a secret, however the secret is nested: its names are the secret's", () => {
    const schema = v.object({
      lazy: v.optional(v.lazy(() => sensitive(v.object({ user: v.string() })))),
      around: v.optional(sensitive(v.lazy(() => v.object({ user: v.string() })))),
      union: v.optional(sensitive(v.union([v.object({ user: v.string() }), v.object({ key: v.string() })]))),
      maybe: v.optional(v.nullable(sensitive(v.lazy(() => v.object({ user: v.string() }))))),
      extra: v.optional(v.string()),
    });
    const given = { lazy: { user: "a", SecretName1: 1 }, around: { user: "a", SecretName2: 1 }, union: { user: "a", SecretName3: 1 }, maybe: { user: "a", SecretName4: 1 }, extr: "x" };
    expect(dropped(schema, given)).toEqual(["extr"]);
    // A key no object keeps is dropped from a secret too, and its name says nothing of the secret (tester H).
    const env = v.object({ env: sensitive(v.record(v.string(), v.string())) });
    expect(dropped(env, JSON.parse('{"env":{"constructor":"secret-value","API_KEY":"k"}}'))).toEqual(["env.constructor"]);
  });

  test("undeclaredFields names a record's keys that no check keeps (constructor, prototype, __proto__), and misspelt fields of a record's values", () => {
    const schema = v.object({ env: v.optional(v.record(v.string(), v.string())), hosts: v.optional(v.record(v.string(), v.object({ port: v.number() }))), any: v.optional(v.unknown()) });
    const given = JSON.parse('{"env":{"constructor":"c","prototype":"p","__proto__":"x","ok":"y"},"hosts":{"a":{"port":1,"prot":2}},"any":{"constructor":"kept"}}');
    expect(dropped(schema, given)).toEqual(["env.constructor", "env.prototype", "env.__proto__", "hosts.a.prot"]);
    expect(droppedFieldText("env.constructor", toCapabilityJsonSchema(schema, "input"))).toBe('"env.constructor" (no object of an input keeps a key named __proto__, constructor, prototype: rename it)');
    // A key the record's own check renames is no dropped key: only the three are known to be dropped.
    const record = { type: "object", properties: { env: { type: "object", additionalProperties: { type: "string" } } } };
    expect(undeclaredFields({ env: { PATH: "/bin" } }, { env: { path: "/bin" } }, record)).toEqual([]);
    // Nor is a key the record's own transform filtered out (a write that means to leave `_private` keys).
    expect(undeclaredFields({ env: { A: "1", _b: "2" } }, { env: { A: "1" } }, record)).toEqual([]);
  });

  test("undeclaredFields finds a misspelt field inside a union of records, a union of an object and a record, and an objectWithRest's declared field (tester H)", () => {
    const unionOfRecords = v.object({ m: v.union([v.record(v.string(), v.object({ a: v.optional(v.number()) })), v.record(v.string(), v.object({ b: v.optional(v.string()) }))]) });
    expect(dropped(unionOfRecords, { m: { k: { c: 1 } } })).toEqual(["m.k.c"]);
    expect(dropped(unionOfRecords, { m: { k: { b: "x" } } })).toEqual([]);
    const objectOrRecord = v.object({ m: v.union([v.object({ kind: v.literal("a"), dryRun: v.optional(v.boolean(), false) }), v.record(v.string(), v.string())]) });
    expect(dropped(objectOrRecord, { m: { kind: "a", dryRn: true } })).toEqual(["m.dryRn"]);
    expect(dropped(objectOrRecord, { m: { x: "y" } })).toEqual([]);
    const withRest = v.objectWithRest({ o: v.optional(v.object({ dryRun: v.optional(v.boolean()) })) }, v.record(v.string(), v.unknown()));
    expect(dropped(withRest, { o: { dryRn: true }, other: { any: 1 } })).toEqual(["o.dryRn"]);
  });

  test("with no transform in the schema (exact), a field of a union's other branch that the chosen one dropped is found, in a variant and nested too (tester I)", () => {
    const target = v.object({ target: v.union([v.object({ path: v.optional(v.string(), ".") }), v.object({ glob: v.string() })]) });
    // The first branch takes it, with its default: the glob the client sent would be lost.
    expect(dropped(target, { target: { glob: "*.ts" } }, true)).toEqual(["target.glob"]);
    expect(dropped(target, { target: { glob: "*.ts" } }, false)).toEqual([]);
    const notify = v.object({ n: v.variant("kind", [v.object({ kind: v.literal("email"), to: v.string() }), v.object({ kind: v.literal("hook"), url: v.string(), dryRun: v.optional(v.boolean()) })]) });
    expect(dropped(notify, { n: { kind: "email", to: "x", dryRun: true } }, true)).toEqual(["n.dryRun"]);
    expect(dropped(notify, { n: { kind: "hook", url: "u", dryRun: true } }, true)).toEqual([]);
  });

  test("a tuple's elements are checked by their own schemas (prefixItems), and a long list of numbers does not use up the look's bound (tester I)", () => {
    const pair = v.object({ p: v.tuple([v.object({ path: v.string(), dryRun: v.optional(v.boolean()) }), v.string()]) });
    expect(dropped(pair, { p: [{ path: "/x", dryRn: true }, "s"] })).toEqual(["p.0.dryRn"]);
    const big = v.object({ items: v.array(v.number()), opts: v.object({ dryRun: v.optional(v.boolean()) }) });
    expect(dropped(big, { items: Array.from({ length: 150_000 }, (_, i) => i), opts: { dryRn: true } })).toEqual(["opts.dryRn"]);
  });

  test("with exact, a field a secret's check dropped is said as the secret's, unnamed (tester I)", () => {
    const auth = v.object({ auth: sensitive(v.object({ token: v.string(), dryRun: v.optional(v.boolean()) })) });
    const lost = dropped(auth, { auth: { token: "secret-tok", dry_run_SecretName: true } }, true);
    expect(lost).toEqual(["auth.…"]);
    expect(droppedFieldText(lost[0]!, toCapabilityJsonSchema(auth, "input"))).toBe('"auth" (a field inside this secret that its schema does not declare, not named: the secret\'s names are its own)');
    expect(dropped(auth, { auth: { token: "secret-tok", dryRun: true } }, true)).toEqual([]);
  });

  test("a record's key its check renamed is not looked into: its value is not in the answer under that key", () => {
    const hosts = { type: "object", properties: { hosts: { type: "object", additionalProperties: { type: "object", properties: { port: { type: "number" } } } } } };
    expect(undeclaredFields({ hosts: { Web: { port: 80, tls: true } } }, { hosts: { web: { port: 80, tls: true } } }, hosts)).toEqual([]);
  });

  test("a loose object whose transform moved its extra fields aside keeps them: no field is named lost (tester I)", () => {
    const item = v.object({ item: v.pipe(v.looseObject({ name: v.string() }), v.transform(({ name, ...extras }) => ({ name, extras }))) });
    expect(dropped(item, { item: { name: "n", color: "red" } })).toEqual([]);
    // A key no check keeps is still lost there.
    expect(dropped(item, JSON.parse('{"item":{"name":"n","__proto__":"x"}}'))).toEqual(["item.__proto__"]);
  });

  test("undeclaredFields ends on a cycle of references", () => {
    const schema = { type: "object", properties: { a: { $ref: "#/$defs/x" } }, $defs: { x: { anyOf: [{ $ref: "#/$defs/y" }] }, y: { allOf: [{ $ref: "#/$defs/x" }, { type: "object", properties: { b: { type: "string" } } }] } } };
    expect(undeclaredFields({ a: { b: "1", c: "2" } }, { a: { b: "1" } }, schema)).toEqual(["a.c"]);
  });
});

describe("declaredOnly", () => {
  test("declaredOnly drops what the schema does not declare, at any depth and through unions and recursion, and keeps secrets and records whole", () => {
    type Node = { name: string; kids: Node[] };
    const node: v.GenericSchema<Node> = v.object({ name: v.string(), kids: v.array(v.lazy(() => node)) });
    const schema = v.object({
      user: v.string(),
      tree: v.optional(node),
      route: v.optional(v.union([v.object({ host: v.string() }), v.object({ port: v.number() })])),
      creds: v.optional(sensitive(v.object({ key: v.string() }))),
      labels: v.optional(v.record(v.string(), v.string())),
      loose: v.optional(v.looseObject({ a: v.string() })),
    });
    const given = {
      user: "bob",
      tokn: "a misspelt secret",
      tree: { name: "root", kids: [{ name: "leaf", kids: [], dryRun: true }] },
      route: { host: "h", port: 1, path: "/" },
      creds: { key: "k", extra: "x" },
      labels: { any: "thing" },
      loose: { a: "a", b: "b" },
    };
    expect(declaredOnly(given, toCapabilityJsonSchema(schema, "input"))).toEqual({
      user: "bob",
      tree: { name: "root", kids: [{ name: "leaf", kids: [] }] },
      route: { host: "h", port: 1 },
      creds: { key: "k", extra: "x" },
      labels: { any: "thing" },
      // Published like any object (JSON Schema does not tell a loose one): what it keeps beyond its fields is not declared.
      loose: { a: "a" },
    });
  });
});

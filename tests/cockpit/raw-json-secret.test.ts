import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { mayHoldSecret } from "../../cockpit/raw-json-secret.ts";
import { toCapabilityJsonSchema } from "../../runtime/capability/json-schema.ts";
import { sensitive } from "../../runtime/capability/sensitive.ts";

// The raw JSON box is filled again only with JSON that can hold no secret (docs/security.md).
const schema = toCapabilityJsonSchema(
  v.object({
    name: v.string(),
    count: v.optional(v.number()),
    tags: v.optional(v.array(v.string())),
    auth: v.optional(v.object({ user: v.string(), token: sensitive(v.string()) })),
    items: v.optional(v.array(v.object({ label: v.string(), key: sensitive(v.string()) }))),
    byHost: v.optional(v.record(v.string(), v.object({ pass: sensitive(v.string()) }))),
    labels: v.optional(v.record(v.string(), v.string())),
    mode: v.optional(v.variant("kind", [v.object({ kind: v.literal("a"), a: v.string() }), v.object({ kind: v.literal("b"), secret: sensitive(v.string()) })])),
    note: v.optional(v.nullable(v.string())),
  }),
  "input",
);

const shapes = toCapabilityJsonSchema(
  v.object({
    pair: v.optional(v.tuple([v.string(), v.number()])),
    strict: v.optional(v.strictTuple([v.string()])),
    rest: v.optional(v.tupleWithRest([v.string()], v.object({ k: v.string() }))),
    mode: v.optional(v.literal("a")),
    level: v.optional(v.union([v.literal(1), v.literal(2)])),
    auth: v.optional(v.variant("kind", [v.object({ kind: v.literal("none"), note: v.optional(v.string()) }), v.object({ kind: v.literal("token"), token: sensitive(v.string()) })])),
    both: v.optional(v.intersect([v.object({ name: v.string() }), v.object({ count: v.number() })])),
    headers: v.optional(v.record(v.string(), v.string())),
    token: v.optional(sensitive(v.string())),
  }),
  "input",
);

describe("mayHoldSecret: tuples, literals, variants, intersections (checking tester, session 42)", () => {
  // A wrong choice of a literal or picklist, of its kind, is no secret: it is shown again, to be corrected.
  test("JSON of these shapes with no secret is shown again", () => {
    for (const json of ['{"pair":["a",1]}', '{"strict":["a"]}', '{"rest":["a",{"k":"x"}]}', '{"rest":["a"]}', '{"mode":"a"}', '{"mode":"b"}', '{"level":2}', '{"level":3}', '{"auth":{"kind":"none","note":"n"}}', '{"both":{"name":"n","count":-1}}', '{"headers":{"h":"v"}}']) {
      expect([json, mayHoldSecret(json, shapes)]).toEqual([json, false]);
    }
  });
  test("a secret in a tuple's extra or wrong-kind place, a literal's place, another variant's field, or under a __proto__ key is withheld", () => {
    for (const json of ['{"pair":["a",{"tokn":"s3cret"}]}', '{"pair":["a",1,"s3cret"]}', '{"strict":["a","s3cret"]}', '{"rest":["a",{"k":"x","p":"s3cret"}]}', '{"mode":{"token":"s3cret"}}', '{"level":"s3cret"}', '{"level":["s3cret"]}', '{"auth":{"kind":"token","note":"s3cret"}}', '{"both":{"name":"n","count":1,"tokn":"s3cret"}}', '{"headers":{"__proto__":"s3cret"}}']) {
      expect([json, mayHoldSecret(json, shapes)]).toEqual([json, true]);
    }
  });
});

describe("mayHoldSecret", () => {
  test("JSON of the schema's shape that gives no secret may be shown again, whatever else is wrong with it", () => {
    for (const json of ['{"name":"n"}', '{"name":"n","count":-1}', '{"count":1.5,"tags":["a","b"]}', '{"name":"n","auth":{"user":"u"}}', '{"name":"n","items":[{"label":"l"}]}', '{"name":"n","byHost":{"h":{}}}', '{"name":"n","labels":{"x":"y"}}', '{"name":"n","mode":{"kind":"a","a":"x"}}', '{"name":"n","note":null}', "{}"]) {
      expect([json, mayHoldSecret(json, schema)]).toEqual([json, false]);
    }
  });

  test("a secret, JSON that does not parse, or a shape the schema does not take at any depth is withheld (containment and checking testers, session 42)", () => {
    for (const json of [
      '{"name":"n","auth":{"user":"u","token":"s3cret"}}',
      '{"name":"n","items":[{"label":"l","key":"s3cret"}]}',
      '{"name":"n","mode":{"kind":"b","secret":"s3cret"}}',
      "{not json",
      // The wrong place, at the top and below it.
      '{"input":{"name":"n","auth":{"token":"s3cret"}}}',
      '{"name":"n","tokn":"s3cret"}',
      '[{"auth":{"token":"s3cret"}}]',
      '"s3cret"',
      '{"name":"n","auth":"s3cret"}',
      '{"name":"n","auth":["s3cret"]}',
      '{"name":"n","items":["s3cret"]}',
      '{"name":"n","byHost":{"h":{"pas":"s3cret"}}}',
      '{"name":"n","byHost":{"h":"s3cret"}}',
      '{"name":"n","tags":[{"token":"s3cret"}]}',
      '{"name":"n","auth":{"user":"u","tokn":"s3cret"}}',
      // A value of another kind than the place takes: a number may be the secret (a PIN) as well.
      '{"name":5}',
    ]) {
      expect([json, mayHoldSecret(json, schema)]).toEqual([json, true]);
    }
  });

  test("an input with no secret field is always shown again", () => {
    const plain = toCapabilityJsonSchema(v.object({ name: v.string() }), "input");
    expect(mayHoldSecret('{"input":{"token":"x"}}', plain)).toBe(false);
    expect(mayHoldSecret("{not json", plain)).toBe(false);
  });
});

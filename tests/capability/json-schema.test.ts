import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { SchemaConversionError, toCapabilityJsonSchema } from "../../runtime/capability/json-schema.ts";
import { sensitive } from "../../runtime/capability/sensitive.ts";

function conversionError(run: () => unknown): SchemaConversionError {
  try {
    run();
  } catch (error) {
    if (error instanceof SchemaConversionError) return error;
    throw error;
  }
  throw new Error("expected a SchemaConversionError");
}

describe("toCapabilityJsonSchema", () => {
  test("toCapabilityJsonSchema targets draft 2020-12", () => {
    expect(toCapabilityJsonSchema(v.object({}), "input").$schema).toBe("https://json-schema.org/draft/2020-12/schema");
  });

  test("a date-time and a time are published as what valibot takes (its pattern), not as RFC 3339 formats it refuses", () => {
    const schema = v.object({ when: v.pipe(v.string(), v.isoDateTime()), at: v.pipe(v.string(), v.isoTime()), day: v.pipe(v.string(), v.isoDate()) });
    const published = toCapabilityJsonSchema(schema, "input").properties as Record<string, { format?: string; pattern?: string }>;
    expect(published.when!.format).toBeUndefined();
    expect(published.at!.format).toBeUndefined();
    expect(published.day!.format).toBe("date");
    // The published pattern and valibot agree on every value, the RFC 3339 ones included.
    for (const value of ["2024-01-02T03:04", "2024-01-02 03:04", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123+02:00", "2024-13-02T03:04"]) {
      expect({ value, published: new RegExp(published.when!.pattern!).test(value) }).toEqual({ value, published: v.safeParse(schema.entries.when, value).success });
    }
    for (const value of ["03:04", "03:04:05", "24:00"]) {
      expect({ value, published: new RegExp(published.at!.pattern!).test(value) }).toEqual({ value, published: v.safeParse(schema.entries.at, value).success });
    }
  });

  test("toCapabilityJsonSchema publishes an optional field's default and leaves it out of required", () => {
    const schema = toCapabilityJsonSchema(v.object({ path: v.optional(v.string(), "."), limit: v.optional(v.number()), tags: v.optional(v.array(v.string()), () => ["a"]) }), "input");
    expect(schema.properties).toEqual({
      path: { type: "string", default: "." },
      limit: { type: "number" },
      tags: { type: "array", items: { type: "string" }, default: ["a"] },
    });
    expect(schema.required).toEqual([]);
  });

  test("toCapabilityJsonSchema leaves a secret's default out of the published schema, saying one applies (a tester saw it on the capability page)", () => {
    const schema = toCapabilityJsonSchema(
      v.object({
        key: v.optional(sensitive(v.string()), "default-secret-value"),
        pin: v.nullable(sensitive(v.string()), "1234-secret"),
        plain: v.optional(v.string(), "shown"),
        // A default holding a secret anywhere inside it (tester E): behind v.lazy, in an object, a list, a record, a tuple, a union.
        lazy: v.optional(v.lazy(() => sensitive(v.string())), "SECRET_G"),
        object: v.optional(v.object({ t: sensitive(v.string()), u: v.string() }), { t: "SECRET_H", u: "x" }),
        list: v.optional(v.array(sensitive(v.string())), ["SECRET_I"]),
        record: v.optional(v.record(v.string(), sensitive(v.string())), { x: "SECRET_L" }),
        tuple: v.optional(v.tuple([sensitive(v.string())]), ["SECRET_M"]),
        union: v.optional(v.union([v.object({ kind: v.literal("x"), t: sensitive(v.string()) }), v.object({ kind: v.literal("y") })]), { kind: "x" as const, t: "SECRET_N" }),
      }),
      "input",
    );
    for (const secret of ["default-secret-value", "1234-secret", "SECRET_G", "SECRET_H", "SECRET_I", "SECRET_L", "SECRET_M", "SECRET_N"]) expect({ secret, published: JSON.stringify(schema).includes(secret) }).toEqual({ secret, published: false });
    const properties = schema.properties as Record<string, Record<string, unknown>>;
    expect(properties.key).toMatchObject({ type: "string", "x-docket-sensitive": true, "x-docket-default-withheld": true });
    expect(properties.key).not.toHaveProperty("default");
    for (const name of ["pin", "lazy", "object", "list", "record", "tuple", "union"]) expect({ name, withheld: properties[name]!["x-docket-default-withheld"] }).toEqual({ name, withheld: true });
    expect(properties.plain).toEqual({ type: "string", default: "shown" });
  });

  test("toCapabilityJsonSchema writes nullable as anyOf with null, still required", () => {
    const schema = toCapabilityJsonSchema(v.object({ a: v.nullable(v.string()), b: v.nullish(v.number()), c: v.nullable(v.string(), "x") }), "input");
    expect(schema.properties).toEqual({
      a: { anyOf: [{ type: "string" }, { type: "null" }] },
      b: { anyOf: [{ type: "number" }, { type: "null" }] },
      c: { anyOf: [{ type: "string" }, { type: "null" }], default: "x" },
    });
    expect(schema.required).toEqual(["a", "c"]);
  });

  test("toCapabilityJsonSchema converts union, literal and picklist", () => {
    const schema = toCapabilityJsonSchema(v.object({ u: v.union([v.string(), v.number()]), l: v.literal("x"), p: v.picklist(["a", "b"]) }), "input");
    expect(schema.properties).toEqual({
      u: { anyOf: [{ type: "string" }, { type: "number" }] },
      l: { const: "x" },
      p: { enum: ["a", "b"], type: "string" },
    });
  });

  test("toCapabilityJsonSchema carries pipe bounds, patterns, descriptions and metadata", () => {
    const schema = toCapabilityJsonSchema(
      v.object({
        s: v.pipe(v.string(), v.minLength(1), v.maxLength(5), v.regex(/^a/), v.description("a short name")),
        n: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10)),
        m: v.pipe(v.string(), v.metadata({ title: "Title", "x-extra": 1 })),
      }),
      "input",
    );
    expect(schema.properties).toEqual({
      s: { type: "string", minLength: 1, maxLength: 5, pattern: "^a", description: "a short name" },
      n: { type: "integer", minimum: 0, maximum: 10 },
      m: { type: "string", title: "Title", "x-extra": 1 },
    });
  });

  test("toCapabilityJsonSchema marks sensitive() fields with x-docket-sensitive", () => {
    const schema = toCapabilityJsonSchema(v.object({ token: sensitive(v.string()), maybe: v.optional(sensitive(v.string())) }), "input");
    expect(schema.properties).toEqual({ token: { type: "string", "x-docket-sensitive": true }, maybe: { type: "string", "x-docket-sensitive": true } });
  });

  test("toCapabilityJsonSchema marks a sensitive() pipe with a transform wherever the mark sits in it, on both sides (tester: sec.xf2)", () => {
    const echo = (s: string) => s;
    const fields = {
      around: sensitive(v.pipe(v.string(), v.transform(echo), v.string())),
      number: sensitive(v.pipe(v.string(), v.transform(Number), v.number())),
      after: v.pipe(v.string(), v.transform(echo), sensitive(v.string())),
      before: v.pipe(sensitive(v.string()), v.transform(echo), v.string()),
      nested: v.pipe(v.pipe(v.string(), v.transform(echo), v.pipe(v.string(), v.metadata({ writeOnly: true, title: "t" }))), v.minLength(1)),
    };
    const input = toCapabilityJsonSchema(v.object(fields), "input").properties as Record<string, Record<string, unknown>>;
    const output = toCapabilityJsonSchema(v.object(fields), "output").properties as Record<string, Record<string, unknown>>;
    for (const key of ["around", "number", "after", "before"]) {
      expect({ key, input: input[key]!["x-docket-sensitive"], output: output[key]!["x-docket-sensitive"] }).toEqual({ key, input: true, output: true });
    }
    expect(input.nested).toEqual({ type: "string", writeOnly: true });
    expect(output.number!.type).toBe("number");
  });

  test("toCapabilityJsonSchema marks a transformed secret inside arrays, records, variants and recursive schemas", () => {
    const secret = sensitive(v.pipe(v.string(), v.transform((s) => s), v.string()));
    type Tree = { name: string; kids: Tree[] };
    const tree: v.GenericSchema<Tree> = v.object({ name: secret, kids: v.array(v.lazy(() => tree)) });
    const schema = v.object({
      list: v.array(secret),
      map: v.record(v.string(), secret),
      choice: v.variant("kind", [v.object({ kind: v.literal("a"), key: secret }), v.object({ kind: v.literal("b") })]),
      tree,
    });
    const published = toCapabilityJsonSchema(schema, "input") as any;
    const marked = { type: "string", "x-docket-sensitive": true };
    expect(published.properties.list.items).toEqual(marked);
    expect(published.properties.map.additionalProperties).toEqual(marked);
    expect(published.properties.choice.oneOf[0].properties.key).toEqual(marked);
    expect(published.properties.tree.properties.name).toEqual(marked);
    expect(published.$defs["0"].properties.name).toEqual(marked);
  });

  test("toCapabilityJsonSchema marks a value its pipe transforms into something holding a secret as a secret, whole (tester: t.wrap)", () => {
    const schema = v.object({
      cfg: v.pipe(v.string(), v.transform((s) => JSON.parse(s) as unknown), v.object({ token: sensitive(v.string()) })),
      deep: v.pipe(v.string(), v.transform((s) => JSON.parse(s) as unknown), v.array(v.object({ auth: v.object({ key: sensitive(v.string()) }) }))),
      plain: v.pipe(v.string(), v.transform((s) => JSON.parse(s) as unknown), v.object({ name: v.string() })),
    });
    for (const side of ["input", "output"] as const) {
      const published = toCapabilityJsonSchema(schema, side).properties as Record<string, Record<string, unknown>>;
      expect({ side, cfg: published.cfg!["x-docket-sensitive"], deep: published.deep!["x-docket-sensitive"], plain: published.plain!["x-docket-sensitive"] }).toEqual({ side, cfg: true, deep: true, plain: undefined });
    }
    // A secret the client sends where the schema points to it stays the only secret: the rest of the value is not hidden.
    const renamed = v.pipe(v.object({ user: v.string(), tok: sensitive(v.string()) }), v.transform((o) => ({ user: o.user, auth: { bearer: o.tok } })));
    const published = toCapabilityJsonSchema(renamed, "input");
    expect(published["x-docket-sensitive"]).toBeUndefined();
    expect(published.properties).toEqual({ user: { type: "string" }, tok: { type: "string", "x-docket-sensitive": true } });
  });

  test("toCapabilityJsonSchema leaves a pipe with a transform and no mark as it was, and the schema it was given unchanged", () => {
    const piped = v.pipe(v.string(), v.transform((s) => s.length), v.number());
    const schema = v.object({ plain: piped, secret: sensitive(piped) });
    const before = JSON.stringify(schema, (_key, value) => (typeof value === "function" ? "fn" : value));
    const published = toCapabilityJsonSchema(schema, "input").properties as Record<string, unknown>;
    expect(published).toEqual({ plain: { type: "string" }, secret: { type: "string", "x-docket-sensitive": true } });
    expect(JSON.stringify(schema, (_key, value) => (typeof value === "function" ? "fn" : value))).toBe(before);
    expect(v.parse(schema, { plain: "abc", secret: "abcd" })).toEqual({ plain: 3, secret: 4 });
  });

  test("toCapabilityJsonSchema publishes the wider schema for v.check refinements", () => {
    const schema = toCapabilityJsonSchema(v.pipe(v.object({ from: v.number(), to: v.number() }), v.check((i) => i.from < i.to, "from must be before to")), "input");
    expect(schema.type).toBe("object");
    expect(schema.required).toEqual(["from", "to"]);
  });

  test("toCapabilityJsonSchema reads the input side of a transform for input, the last schema for output", () => {
    const piped = v.pipe(v.string(), v.transform((s) => s.length), v.number());
    expect(toCapabilityJsonSchema(piped, "input").type).toBe("string");
    expect(toCapabilityJsonSchema(piped, "output").type).toBe("number");
  });

  test("toCapabilityJsonSchema refuses v.date() naming the field and the schema type", () => {
    const error = conversionError(() => toCapabilityJsonSchema(v.object({ name: v.string(), when: v.date() }), "input"));
    expect(error.path).toBe("when");
    expect(error.schemaType).toBe("date");
    expect(error.message).toContain("input.when");
    expect(error.message).toContain('"date"');
    expect(error.message).toContain("v.isoDateTime()");
  });

  test("toCapabilityJsonSchema names a nested path through arrays, optionals and unions", () => {
    const error = conversionError(() =>
      toCapabilityJsonSchema(v.object({ items: v.optional(v.array(v.object({ at: v.union([v.string(), v.function()]) }))) }), "output"),
    );
    expect(error.path).toBe("items[].at");
    expect(error.schemaType).toBe("function");
    expect(error.message).toStartWith("output.items[].at cannot be published as JSON Schema");
  });

  test("toCapabilityJsonSchema refuses a custom schema", () => {
    const error = conversionError(() => toCapabilityJsonSchema(v.object({ c: v.custom<string>((x) => typeof x === "string") }), "input"));
    expect(error.path).toBe("c");
    expect(error.schemaType).toBe("custom");
  });

  test("toCapabilityJsonSchema names the schema itself when the top level is at fault", () => {
    const error = conversionError(() => toCapabilityJsonSchema(v.date(), "input"));
    expect(error.path).toBeNull();
    expect(error.message).toStartWith("the input schema cannot be published");
  });

  test("toCapabilityJsonSchema refuses an output transform with no schema after it", () => {
    const error = conversionError(() => toCapabilityJsonSchema(v.object({ n: v.pipe(v.string(), v.transform((s) => s.length)) }), "output"));
    expect(error.path).toBe("n");
    expect(error.schemaType).toBe("transform");
  });
});

describe("toCapabilityJsonSchema with recursion", () => {
  test("toCapabilityJsonSchema converts a recursive lazy schema through $defs", () => {
    const node: v.GenericSchema<{ name: string; children: unknown[] }> = v.object({ name: v.string(), children: v.array(v.lazy(() => node)) });
    const schema = toCapabilityJsonSchema(node, "input");
    expect(schema.$defs).toBeDefined();
  });

  test("toCapabilityJsonSchema names the field at fault inside a recursive schema", () => {
    const node: v.GenericSchema<unknown> = v.object({ at: v.date(), children: v.array(v.lazy(() => node)) });
    const error = conversionError(() => toCapabilityJsonSchema(node, "input"));
    expect(error.path).toBe("at");
  });
});

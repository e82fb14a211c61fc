import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { sensitive } from "../../runtime/capability/sensitive.ts";
import { beforeTransforms } from "../../runtime/execution/before-transforms.ts";

describe("beforeTransforms", () => {
  test("beforeTransforms gives back a schema without transforms itself, so parsing it costs nothing more", () => {
    const schema = v.object({ user: v.string(), tok: v.optional(sensitive(v.string()), "Default1"), list: v.array(v.pipe(v.string(), v.minLength(1))) });
    expect(beforeTransforms(schema)).toBe(schema);
  });

  test("beforeTransforms parses the input as the schema sees it before each pipe's first transformation, defaults filled in", () => {
    const schema = v.pipe(
      v.object({
        tok: v.optional(sensitive(v.string()), () => "FromDefault1"),
        cfg: v.optional(v.pipe(v.object({ key: v.nullish(v.string(), "Nested2") }), v.transform((o) => o.key), v.string()), {}),
        names: v.array(v.pipe(v.string(), v.trim(), v.transform((s) => s.length))),
      }),
      v.transform((o) => ({ bearer: o.tok, key: o.cfg, names: o.names })),
    );
    const input = { names: [" ab "] };
    expect(v.parse(schema, input)).toEqual({ bearer: "FromDefault1", key: "Nested2", names: [2] });
    expect(v.parse(beforeTransforms(schema), input)).toEqual({ tok: "FromDefault1", cfg: { key: "Nested2" }, names: [" ab "] });
    // Read once per schema.
    expect(beforeTransforms(schema)).toBe(beforeTransforms(schema));
  });
});

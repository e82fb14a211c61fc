import { describe, expect, test } from "bun:test";
import { buildFailure } from "../../runtime/execution/failure.ts";
import { fieldErrorsOf } from "../../cockpit/failure-fields.ts";
import { formShape } from "../../cockpit/form-fields.ts";

const schema = {
  type: "object",
  properties: {
    i: { type: "integer", maximum: 10 },
    "a.b": { type: "string" },
    owner: { type: "object", properties: { name: { type: "string" } } },
    rows: { type: "array", items: { type: "object", properties: { path: { type: "string" }, size: { type: "number" } } } },
    lines: { type: "array", items: { type: "string" } },
    target: {
      anyOf: [
        { type: "object", properties: { kind: { const: "file" }, path: { type: "string" } }, required: ["kind", "path"] },
        { type: "object", properties: { kind: { const: "url" }, url: { type: "string" } }, required: ["kind", "url"] },
      ],
    },
  },
};
const shape = formShape(schema);
const refused = (context: Record<string, unknown>, message = "Cannot call x: …") =>
  buildFailure({ error_code: "invalid_input", stage: "validate", message, context, request_id: "r", trace_id: "t" });
const problems = (...list: Array<[string, string]>) => refused({ problems: list.map(([path, message]) => ({ path, message })) });

describe("fieldErrorsOf", () => {
  test("fieldErrorsOf puts each schema problem at the deepest field its path reaches", () => {
    const form = new URLSearchParams([
      ["input.i", "11"],
      // Row 0 was left empty: the input's rows[0] is the form's row 1.
      ["input.rows.0.path", ""],
      ["input.rows.1.path", "p"],
      ["input.rows.1.size", "x"],
      ["input.target.variant", "1"],
    ]);
    const errors = fieldErrorsOf(
      problems(
        ["input.i", "Invalid value: Expected <=10 but received 11"],
        ["input.rows[0].size", "Invalid type"],
        ['input["a.b"]', "Too short"],
        ["input.owner.name", "Required"],
        ["input.lines[2]", "Too long"],
        ["input.target.url", "Invalid URL"],
        ["input.nothing", "Unknown"],
        ["input", "Whole-input check"],
      ),
      shape,
      form,
    );
    expect(errors).toEqual({
      "input.i": "i: Invalid value: Expected <=10 but received 11",
      "input.rows.1.size": "rows[0].size: Invalid type",
      "input.a~1b": '["a.b"]: Too short',
      "input.owner.name": "owner.name: Required",
      "input.lines": "lines[2]: Too long",
      "input.target.v1.url": "target.url: Invalid URL",
    });
  });

  test("fieldErrorsOf marks the field a failure names, and the raw JSON box instead of the fields when the box was sent", () => {
    expect(fieldErrorsOf(refused({ field: "i" }, "No such i."), shape, new URLSearchParams())).toEqual({ "input.i": "No such i." });
    expect(fieldErrorsOf(problems(["input.i", "Too big"]), shape, new URLSearchParams([["raw_json", '{"i": 11}']]))).toEqual({ raw_json: "Cannot call x: …" });
    expect(fieldErrorsOf(refused({ reason: "too_large" }), shape, new URLSearchParams())).toEqual({});
  });

  test("fieldErrorsOf marks each field a write would have lost (unknown_fields), at the deepest control its path reaches (tester H)", () => {
    const lost = refused({ reason: "unknown_fields", fields: ["owner.constructor", "rows.0.sise"] }, "Cannot call x: its input has no field …");
    const form = new URLSearchParams([["input.rows.0.path", "a"]]);
    expect(fieldErrorsOf(lost, shape, form)).toEqual({ "input.owner": "Cannot call x: its input has no field …", "input.rows": "Cannot call x: its input has no field …" });
  });
});

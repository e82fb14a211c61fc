import { describe, expect, test } from "bun:test";
import { formShape } from "../../cockpit/form-fields.ts";
import { inputFromForm, optionValue } from "../../cockpit/form-input.ts";

const schema = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, description: "Who." },
    secret: { type: "string", writeOnly: true },
    pin: { type: "integer", "x-docket-sensitive": true },
    key: { type: "string", format: "password" },
    mode: { anyOf: [{ const: "fast" }, { const: "slow" }] },
    level: { enum: [1, 2, 3] },
    note: { anyOf: [{ type: "string" }, { type: "null" }] },
    flags: { type: "array", items: { enum: ["a", "b"] } },
    scores: { type: "array", items: { type: "number" } },
    nested: { type: "object", properties: { x: { type: "number" } } },
    either: { anyOf: [{ type: "string" }, { type: "number" }] },
    on: { type: "boolean", default: true },
  },
  required: ["name", "note"],
};

describe("formShape", () => {
  test("formShape gives each property the control that can express it, and JSON to the rest", () => {
    const shape = formShape(schema)!;
    const kinds = Object.fromEntries(shape.map((f) => [f.name, f.kind]));
    expect(kinds).toEqual({
      name: "text",
      secret: "password",
      pin: "integer",
      key: "password",
      mode: "choice",
      level: "choice",
      note: "text",
      flags: "choices",
      scores: "list",
      nested: "json",
      either: "json",
      on: "boolean",
    });
    const byName = Object.fromEntries(shape.map((f) => [f.name, f]));
    expect(byName.pin!.secret).toBe(true);
    expect(byName.note!.nullable).toBe(true);
    expect(byName.name!.required).toBe(true);
    expect(byName.level!.options).toEqual([1, 2, 3]);
    expect(byName.mode!.options).toEqual(["fast", "slow"]);
    expect(byName.on!.default).toBe(true);
  });

  test("formShape answers null for an input that is not an object of named properties", () => {
    expect(formShape({ type: "array", items: { type: "string" } })).toBeNull();
    expect(formShape({ type: "object", additionalProperties: { type: "number" } })).toBeNull();
  });
});

describe("inputFromForm", () => {
  const shape = formShape(schema)!;
  const form = (entries: Array<[string, string]>) => new URLSearchParams(entries);

  test("inputFromForm reads every kind of control back into the input's types", () => {
    const result = inputFromForm(
      shape,
      form([
        ["input.name", "Ada"],
        ["input.secret", "s"],
        ["input.pin", "1234"],
        ["input.mode", optionValue("slow")],
        ["input.level", optionValue(2)],
        ["input.note", ""],
        ["input.flags", optionValue("b")],
        ["input.flags", optionValue("a")],
        ["input.scores", "1.5\n\n2"],
        ["input.nested", '{"x": 1}'],
        ["input.either", "7"],
      ]),
    );
    expect(result).toEqual({
      ok: true,
      input: { name: "Ada", secret: "s", pin: 1234, mode: "slow", level: 2, note: null, flags: ["b", "a"], scores: [1.5, 2], nested: { x: 1 }, either: 7, on: false },
    });
  });

  test("inputFromForm names each field it cannot read and what was wrong", () => {
    const result = inputFromForm(shape, form([["input.pin", "12.5"], ["input.level", "9"], ["input.scores", "1\nlots"], ["input.nested", "{"]]));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual({
      "input.name": "name is required.",
      // pin is a secret: its problem is named, its value never quoted back.
      "input.pin": "pin must be a whole number, got a value that is not shown (the field holds a secret).",
      "input.level": 'level must be one of 1, 2, 3, got "9".',
      "input.scores": 'scores (line 2) must be a number, got "lots".',
      "input.nested": expect.stringContaining("nested is not valid JSON"),
    });
    expect(result.message).toStartWith("The input has 5 problems:");
  });

  test("inputFromForm takes the raw JSON control as the whole input when it is filled", () => {
    expect(inputFromForm(shape, form([["raw_json", '{"anything": [1]}'], ["input.pin", "x"]]))).toEqual({ ok: true, input: { anything: [1] } });
    expect(inputFromForm(null, form([]))).toEqual({ ok: true, input: {} });
    const bad = inputFromForm(null, form([["raw_json", "[1,"]]));
    expect(bad.ok).toBe(false);
  });
});

import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { toCapabilityJsonSchema } from "../../runtime/capability/json-schema.ts";
import { sensitive } from "../../runtime/capability/sensitive.ts";
import { formShape } from "../../cockpit/form-fields.ts";
import { inputFromForm, optionValue } from "../../cockpit/form-input.ts";
import { toServerWallTime, withServerZone } from "../../cockpit/local-time.ts";

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
      nested: "object",
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

  test("formShape types a sensitive date or date-time blind, in a password box: a date box would show it (tester Z2)", () => {
    const shape = formShape({
      type: "object",
      properties: { when: { type: "string", format: "date-time", writeOnly: true }, day: { type: "string", format: "date", "x-docket-sensitive": true }, open: { type: "string", format: "date-time" } },
    })!;
    expect(Object.fromEntries(shape.map((f) => [f.name, f.kind]))).toEqual({ when: "password", day: "password", open: "timestamp" });
  });

  test("formShape follows $ref: a secret inside v.lazy, or anywhere in a recursive schema, is typed blind and never filled in again", () => {
    type Node = { token: string; name: string; children: Node[] };
    const node: v.GenericSchema<Node> = v.object({ token: sensitive(v.string()), name: v.string(), children: v.array(v.lazy(() => node)) });
    const published = toCapabilityJsonSchema(v.object({ lazy: v.lazy(() => sensitive(v.string())), tree: node, maybe: v.nullable(v.lazy(() => node)) }), "input");
    const byName = Object.fromEntries(formShape(published)!.map((f) => [f.name, f]));
    expect([byName.lazy!.kind, byName.lazy!.secret]).toEqual(["password", true]);
    expect(byName.tree!.kind).toBe("object");
    const tree = Object.fromEntries(byName.tree!.fields.map((f) => [f.name, f]));
    expect([tree.token!.kind, tree.name!.kind]).toEqual(["password", "text"]);
    // Rows holding secrets are one JSON box (as for any array of them), its secrets followed
    // through the reference: typed blind, never filled in again.
    expect([tree.children!.kind, tree.children!.sensitive]).toEqual(["json", true]);
    expect(byName.maybe!.nullable).toBe(true);
    expect(byName.maybe!.fields.find((f) => f.name === "token")!.kind).toBe("password");
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
        ["input.nested.x", "1"],
        ["input.either", "7"],
      ]),
    );
    expect(result).toEqual({
      ok: true,
      input: { name: "Ada", secret: "s", pin: 1234, mode: "slow", level: 2, note: null, flags: ["b", "a"], scores: [1.5, 2], nested: { x: 1 }, either: 7, on: false },
    });
  });

  test("inputFromForm names each field it cannot read and what was wrong", () => {
    const result = inputFromForm(shape, form([["input.pin", "12.5"], ["input.level", "9"], ["input.scores", "1\nlots"], ["input.nested.x", "many"]]));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual({
      "input.name": "name is required.",
      // pin is a secret: its problem is named, its value never quoted back.
      "input.pin": "pin must be a whole number, got a value that is not shown (the field holds a secret).",
      "input.level": 'level must be one of 1, 2, 3, got "9".',
      "input.scores": 'scores (line 2) must be a number, got "lots".',
      "input.nested.x": 'x must be a number, got "many".',
      "input.nested": "nested has problems in its fields.",
    });
    expect(result.message).toStartWith("The input has 6 problems:");
  });

  test("inputFromForm reads a number as a number box submits one, never as Number() would (0x10, Infinity, +5)", () => {
    for (const text of ["0x10", "0b1", "Infinity", "+5", "1_000", "1e400", "5.", "1 2"]) {
      const result = inputFromForm(shape, form([["input.name", "Ada"], ["input.secret", "s"], ["input.pin", "1"], ["input.nested.x", text]]));
      expect(result.ok ? { text, read: result.input } : { text, errors: result.errors }).toEqual({ text, errors: { "input.nested.x": `x must be a number, got ${JSON.stringify(text)}.`, "input.nested": "nested has problems in its fields." } });
    }
    for (const [text, value] of [[" -1.5 ", -1.5], [".5", 0.5], ["1e3", 1000], ["007", 7]] as const) {
      const result = inputFromForm(shape, form([["input.name", "Ada"], ["input.secret", "s"], ["input.pin", "1"], ["input.nested.x", text]]));
      expect(result.ok && (result.input as { nested: { x: number } }).nested.x).toBe(value);
    }
  });

  test("inputFromForm takes the raw JSON control as the whole input when it is filled", () => {
    expect(inputFromForm(shape, form([["raw_json", '{"anything": [1]}'], ["input.pin", "x"]]))).toEqual({ ok: true, input: { anything: [1] } });
    expect(inputFromForm(null, form([]))).toEqual({ ok: true, input: {} });
    const bad = inputFromForm(null, form([["raw_json", "[1,"]]));
    expect(bad.ok).toBe(false);
  });

  test("inputFromForm says an input that is no object goes in the raw JSON box when it is empty, not that an object was received (MCP tester, session 41)", () => {
    expect(inputFromForm(null, form([]), { rootType: "string" })).toEqual({
      ok: false,
      errors: { raw_json: "The input of this capability is a string, not an object: write it as JSON in the raw JSON box (a string in quotes), then run it again." },
      message: "The input of this capability is a string, not an object: write it as JSON in the raw JSON box (a string in quotes), then run it again.",
    });
    expect(inputFromForm(null, form([["raw_json", '"Ada"']]), { rootType: "string" })).toEqual({ ok: true, input: "Ada" });
    // A record or an input of any shape may be an empty object.
    expect(inputFromForm(null, form([]), { rootType: "object" })).toEqual({ ok: true, input: {} });
  });
});

describe("generated forms for structured input", () => {
  const structured = {
    type: "object",
    properties: {
      owner: { type: "object", properties: { name: { type: "string" }, email: { type: "string" } }, required: ["name"] },
      rows: { type: "array", items: { type: "object", properties: { path: { type: "string" }, weight: { type: "integer" } }, required: ["path"] } },
      labels: { type: "object", propertyNames: { type: "string" }, additionalProperties: { type: "number" } },
      target: {
        oneOf: [
          { type: "object", properties: { kind: { const: "branch" }, name: { type: "string" } }, required: ["kind", "name"] },
          { type: "object", properties: { kind: { const: "tag" }, version: { type: "string" }, signed: { type: "boolean" } }, required: ["kind", "version"] },
        ],
      },
      day: { type: "string", format: "date" },
      at: { type: "string", format: "date-time" },
      colours: { type: "array", items: { enum: ["red", "green", "blue"], type: "string" } },
    },
    required: ["owner", "target"],
  };
  const shape = formShape(structured)!;
  const byName = Object.fromEntries(shape.map((f) => [f.name, f]));

  test("formShape makes fieldsets, rows, key/value rows, a variant chooser, date inputs and checkboxes", () => {
    expect(shape.map((f) => f.kind)).toEqual(["object", "rows", "record", "variant", "date", "timestamp", "choices"]);
    // v.isoDateTime() is published as its pattern: still a date-and-time box.
    const published = toCapabilityJsonSchema(v.object({ when: v.pipe(v.string(), v.isoDateTime()) }), "input");
    expect(formShape(published)!.map((f) => f.kind)).toEqual(["datetime"]);
    expect(byName.owner!.fields.map((f) => [f.control, f.kind, f.required])).toEqual([
      ["input.owner.name", "text", true],
      ["input.owner.email", "text", false],
    ]);
    expect(byName.rows!.fields.map((f) => f.control)).toEqual(["input.rows.__row__.path", "input.rows.__row__.weight"]);
    expect(byName.labels!.fields.map((f) => [f.name, f.kind])).toEqual([
      ["key", "text"],
      ["value", "number"],
    ]);
    expect(byName.target!.variants.map((v) => [v.label, v.constant, v.fields.map((f) => f.control)])).toEqual([
      ["branch", { name: "kind", value: "branch" }, ["input.target.v0.name"]],
      ["tag", { name: "kind", value: "tag" }, ["input.target.v1.version", "input.target.v1.signed"]],
    ]);
  });

  test("inputFromForm reads nested groups, rows (skipping empty ones), records and the chosen variant", () => {
    const result = inputFromForm(
      shape,
      new URLSearchParams([
        ["input.owner.name", "Ada"],
        ["input.rows.0.path", "src"],
        ["input.rows.0.weight", "2"],
        ["input.rows.1.path", ""],
        ["input.rows.1.weight", ""],
        ["input.rows.2.path", "docs"],
        ["input.labels.0.key", "speed"],
        ["input.labels.0.value", "1.5"],
        ["input.labels.1.key", ""],
        ["input.labels.1.value", ""],
        ["input.target.variant", "1"],
        ["input.target.v0.name", "ignored: not the chosen shape"],
        ["input.target.v1.version", "v2.0"],
        ["input.target.v1.signed", "true"],
        ["input.day", "2026-12-01"],
        ["input.at", "2026-12-01T09:30+01:00"],
        ["input.colours", optionValue("red")],
        ["input.colours", optionValue("blue")],
      ]),
    );
    expect(result).toEqual({
      ok: true,
      input: {
        owner: { name: "Ada" },
        rows: [{ path: "src", weight: 2 }, { path: "docs" }],
        labels: { speed: 1.5 },
        target: { kind: "tag", version: "v2.0", signed: true },
        day: "2026-12-01",
        at: "2026-12-01T09:30+01:00",
        colours: ["red", "blue"],
      },
    });
  });

  test("inputFromForm names the nested control that is wrong, and refuses a record's duplicate key", () => {
    const result = inputFromForm(
      shape,
      new URLSearchParams([
        ["input.owner.email", "a@b"],
        ["input.rows.0.weight", "heavy"],
        ["input.labels.0.key", "x"],
        ["input.labels.0.value", "1"],
        ["input.labels.1.key", "x"],
        ["input.labels.1.value", "2"],
        ["input.day", "tomorrow"],
      ]),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual({
      "input.owner.name": "name is required.",
      "input.owner": "owner has problems in its fields.",
      "input.rows.0.path": "path is required.",
      "input.rows.0.weight": 'weight must be a number, got "heavy".',
      "input.rows": "rows has problems in row 1.",
      "input.labels": 'labels has the key "x" twice.',
      "input.target": "target: choose one of branch, tag.",
      "input.day": 'day must be a date (yyyy-mm-dd), got "tomorrow".',
    });
  });
});

describe("inputFromForm: date-time fields", () => {
  const shape = formShape(toCapabilityJsonSchema(v.object({ ts: v.pipe(v.string(), v.isoTimestamp()) }), "input"));
  const read = (text: string) => {
    const result = inputFromForm(shape, new URLSearchParams([["input.ts", text]]));
    return result.ok ? (result.input as { ts: string }).ts : result.errors["input.ts"];
  };

  test("inputFromForm completes a zone-less date-and-time box with seconds and the server's offset, so v.isoTimestamp() takes it", () => {
    for (const [typed, local] of [
      ["2026-12-03T10:11", new Date(2026, 11, 3, 10, 11)],
      ["2026-12-03T10:11:05", new Date(2026, 11, 3, 10, 11, 5)],
      ["2026-07-03T23:59:59.250", new Date(2026, 6, 3, 23, 59, 59, 250)],
    ] as const) {
      const ts = read(typed)!;
      expect(ts).toStartWith(typed.length === 16 ? `${typed}:00` : typed);
      expect(ts).toMatch(/[+-]\d{2}:\d{2}$/);
      expect(v.is(v.pipe(v.string(), v.isoTimestamp()), ts)).toBe(true);
      // The same moment as that wall time on the server's clock.
      expect(Date.parse(ts)).toBe(local.getTime());
    }
  });

  test("inputFromForm keeps a date-time that has a zone as typed, and names one that is no date-time", () => {
    expect(read("2026-12-03T10:11:05Z")).toBe("2026-12-03T10:11:05Z");
    expect(read("2026-12-03T10:11:05.5-05:30")).toBe("2026-12-03T10:11:05.5-05:30");
    expect(read("tomorrow")).toBe('ts must be a date and time (yyyy-mm-ddThh:mm, seconds and a zone optional), got "tomorrow".');
  });

  test("inputFromForm names a date-time of the right shape that is no day or time of the calendar, at its field: it reached the schema as 2026-13-45T99:99:00+00:00 (cockpit tester, session 46)", () => {
    expect(read("2026-13-45T99:99")).toBe('ts: "2026-13-45T99:99" is no date and time of the calendar: there is no month 13.');
    expect(read("2026-02-29T10:00")).toBe('ts: "2026-02-29T10:00" is no date and time of the calendar: 2026-02 has no day 29 (it has 28).');
    expect(read("2028-02-29T10:00")).toMatch(/^2028-02-29T10:00:00[+-]\d{2}:\d{2}$/);
    expect(read("2026-12-03T24:00")).toBe('ts: "2026-12-03T24:00" is no date and time of the calendar: there is no hour 24 (00 to 23).');
    expect(read("2026-12-03T10:60")).toContain("there is no minute 60");
    expect(read("2026-12-03T10:11:75")).toContain("there is no second 75");
    expect(read("2026-12-03T10:11:05+25:00")).toContain("there is no offset from UTC of 25:00");
    // An offset of hours alone, and year 0, a leap year (checking tester, session 46).
    expect(read("2026-01-15T10:00:00+25")).toContain("there is no offset from UTC of 25:00");
    expect(read("0000-02-29T10:00:00Z")).toBe("0000-02-29T10:00:00Z");
    expect(read("1900-02-29T10:00")).toContain("1900-02 has no day 29 (it has 28)");
    const dates = formShape(toCapabilityJsonSchema(v.object({ day: v.pipe(v.string(), v.isoDate()), at: v.pipe(v.string(), v.isoDateTime()) }), "input"));
    const result = inputFromForm(dates, new URLSearchParams([["input.day", "2026-04-31"], ["input.at", "2026-00-10T10:00"]]));
    expect(result.ok ? null : result.errors).toEqual({
      "input.day": 'day: "2026-04-31" is no day of the calendar: 2026-04 has no day 31 (it has 30).',
      "input.at": 'at: "2026-00-10T10:00" is no date and time of the calendar: there is no month 00.',
    });
  });

  test("withServerZone reads a wall time the zone's clocks skip as no moment and one they show twice as two, and any other as its one moment", () => {
    expect(withServerZone("2026-03-29T02:30", "Europe/Paris")).toEqual({ kind: "skipped", zone: "Europe/Paris", before: "+01:00", after: "+02:00" });
    expect(withServerZone("2026-10-25T02:30", "Europe/Paris")).toEqual({ kind: "repeated", zone: "Europe/Paris", earlier: "2026-10-25T02:30:00+02:00", later: "2026-10-25T02:30:00+01:00" });
    expect(withServerZone("2026-03-08T02:30", "America/New_York")).toMatchObject({ kind: "skipped", before: "-05:00", after: "-04:00" });
    expect(withServerZone("2026-11-01T01:30:15.5", "America/New_York")).toMatchObject({ kind: "repeated", earlier: "2026-11-01T01:30:15.5-04:00", later: "2026-11-01T01:30:15.5-05:00" });
    // The edges of the changes are one moment each.
    for (const [wall, value] of [
      ["2026-03-29T01:59:59", "2026-03-29T01:59:59+01:00"],
      ["2026-03-29T03:00", "2026-03-29T03:00:00+02:00"],
      ["2026-10-25T01:59:59", "2026-10-25T01:59:59+02:00"],
      ["2026-10-25T03:00", "2026-10-25T03:00:00+01:00"],
      ["2026-12-03T10:11", "2026-12-03T10:11:00+01:00"],
    ]) {
      expect(withServerZone(wall!, "Europe/Paris")).toEqual({ kind: "moment", value: value! });
    }
    expect(withServerZone("2026-03-29T02:30", "UTC")).toEqual({ kind: "moment", value: "2026-03-29T02:30:00+00:00" });
  });

  test("inputFromForm refuses a wall time the server's clocks skip or show twice, at its field, saying what to send instead", () => {
    const zone = process.env.TZ;
    process.env.TZ = "Europe/Paris";
    try {
      expect(read("2026-03-29T02:30")).toBe(
        'ts: "2026-03-29T02:30" does not exist in the server\'s time zone (Europe/Paris): its clocks skip that time, going from UTC+01:00 to UTC+02:00. Pick a time outside the skipped hour, or send the moment with its UTC offset through the raw JSON box.',
      );
      expect(read("2026-10-25T02:30")).toBe(
        'ts: "2026-10-25T02:30" happens twice in the server\'s time zone (Europe/Paris), whose clocks go back over it. Send the moment with its offset through the raw JSON box: 2026-10-25T02:30:00+02:00 for the first, 2026-10-25T02:30:00+01:00 for the second.',
      );
      expect(read("2026-03-29T03:30")).toBe("2026-03-29T03:30:00+02:00");
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  test("toServerWallTime gives the box the stored moment as the server's wall time, which the form turns back into that moment", () => {
    for (const stored of ["2026-12-03T10:11:05Z", "2026-06-30T22:00:00.125+02:00"]) {
      const wall = toServerWallTime(stored);
      expect(wall).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?$/);
      expect(Date.parse(read(wall)!)).toBe(Date.parse(stored));
    }
    expect(toServerWallTime("2026-12-03T10:11")).toBe("2026-12-03T10:11");
  });
});

describe("inputFromForm: names that look like structure", () => {
  const schema = {
    type: "object",
    properties: {
      opts: { type: "object", properties: { variant: { type: "string" } } },
      labels: { type: "object", additionalProperties: { type: "string" } },
    },
  };

  test("inputFromForm keeps an optional object whose only filled field is called variant", () => {
    expect(inputFromForm(formShape(schema), new URLSearchParams([["input.opts.variant", "dark"]]))).toEqual({ ok: true, input: { opts: { variant: "dark" } } });
  });

  test("inputFromForm keeps a record key __proto__ as a key, not as the record's prototype", () => {
    const result = inputFromForm(formShape(schema), new URLSearchParams([["input.labels.0.key", "__proto__"], ["input.labels.0.value", "x"]]));
    expect(result.ok && JSON.stringify(result.input)).toBe('{"labels":{"__proto__":"x"}}');
    expect(result.ok && Object.getPrototypeOf((result.input as { labels: object }).labels)).toBe(Object.prototype);
  });
});

import { afterAll, describe, expect, test } from "bun:test";
import type { RegisteredCapability } from "../../runtime/capability/registered.ts";
import type { ExecutionStore } from "../../runtime/store/store.ts";
import { againValues } from "../../cockpit/run-again.ts";
import { ISO_DATE_TIME_PATTERN } from "../../runtime/capability/json-schema.ts";
import { formShape } from "../../cockpit/form-fields.ts";
import { inputFromForm } from "../../cockpit/form-input.ts";
import { CapabilityPage } from "../../cockpit/pages/capability.tsx";
import { capabilityOf, ID, runningSnapshot } from "./_support/fixtures.ts";
import { closeParsed, parseHtml } from "./_support/html.ts";

afterAll(closeParsed);

/** team.look as it is now: `name` was renamed `title` (and an object's `nick` `alias`) after the execution ran. */
function renamed(extra: Record<string, unknown> = {}): RegisteredCapability {
  return {
    ...capabilityOf("read"),
    input_schema: {
      type: "object",
      properties: { title: { type: "string" }, owner: { type: "object", properties: { alias: { type: "string" } } }, ...extra },
      required: ["title"],
    },
  };
}

/** A store that knows one execution of team.look, which ran with `input`. */
const storeWith = (input: unknown) => ({ get: (id: string) => (id === ID ? runningSnapshot({ capability: "team.look", state: "succeeded", input }) : null) }) as unknown as ExecutionStore;

const OLD_INPUT = { name: "old", owner: { nick: "ada" }, title: "kept" };

describe("Run again after the capability's input changed", () => {
  test("againValues names each member of the old input the form has no field for, and keeps the old input in the raw JSON box", () => {
    const again = againValues(storeWith(OLD_INPUT), renamed(), ID);
    expect(again.kind).toBe("filled");
    if (again.kind !== "filled") return;
    expect(again.notice).toContain(`The form holds what it can of the input of ${ID}.`);
    expect(again.notice).toContain("The form has no field for name, owner.nick: the capability's input changed since.");
    expect(again.notice).toContain("raw JSON box");
    expect(JSON.parse(again.values.get("raw_json")!)).toEqual(OLD_INPUT);
    // What the form can hold, it holds.
    expect(again.values.get("input.title")).toBe("kept");

    const doc = parseHtml(String(CapabilityPage({ root: "/work/checkout", capability: renamed(), values: again.values, errors: {}, problem: null, result: null, history: [], notice: again.notice })));
    expect(JSON.parse(doc.querySelector('textarea[name="raw_json"]')!.textContent!)).toEqual(OLD_INPUT);
    expect(doc.querySelector("details.raw-json")!.hasAttribute("open")).toBe(true);
    expect(doc.querySelector('[data-slot="again"]')!.textContent).toContain("no field for name, owner.nick");
  });

  test("againValues leaves the raw JSON box empty when the form holds the whole input, and when the input holds secrets", () => {
    const same = againValues(storeWith({ title: "t", owner: { alias: "a" } }), renamed(), ID);
    expect(same.kind === "filled" && [same.notice, same.values.has("raw_json")]).toEqual([`The form holds the input of ${ID}.`, false]);

    const secret = againValues(storeWith({ ...OLD_INPUT, token: "[redacted]" }), renamed({ token: { type: "string", writeOnly: true } }), ID);
    expect(secret.kind).toBe("filled");
    if (secret.kind !== "filled") return;
    expect(secret.values.has("raw_json")).toBe(false);
    expect(secret.notice).toContain("The form has no field for name, owner.nick");
    expect(secret.notice).not.toContain("raw JSON box");
  });

  test("againValues names each member whose field can no longer hold it as it was, leaves that field empty, and keeps the old input in the raw JSON box", () => {
    const old = { limit: "ten", mode: "b", tags: ["x", "y"], rows: [{ a: "1", b: 2 }], title: "kept" };
    const retyped = renamed({
      limit: { type: "number" },
      mode: { enum: ["a", "c"] },
      tags: { type: "string" },
      rows: { type: "array", items: { type: "object", properties: { a: { type: "string" } } } },
    });
    const again = againValues(storeWith(old), retyped, ID);
    expect(again.kind).toBe("filled");
    if (again.kind !== "filled") return;
    expect(again.notice).toContain(`The form holds what it can of the input of ${ID}.`);
    expect(again.notice).toContain("The form has no field for rows.0.b, and cannot hold limit, mode, tags as they were (left empty): the capability's input changed since.");
    expect(JSON.parse(again.values.get("raw_json")!)).toEqual(old);
    expect(["input.limit", "input.mode", "input.tags"].filter((name) => again.values.has(name))).toEqual([]);
    expect([again.values.get("input.title"), again.values.get("input.rows.0.a")]).toEqual(["kept", "1"]);
  });

  test("againValues fills a form that holds the input as it was, so that sending it sends that input, and says nothing changed", () => {
    const shape = {
      type: "object",
      properties: {
        n: { type: "integer" },
        b: { anyOf: [{ type: "boolean" }, { type: "null" }] },
        o: { anyOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { type: "null" }] },
        l: { type: "array", items: { type: "string" } },
        pick: { enum: ["a", "b"] },
        rows: { type: "array", items: { type: "object", properties: { p: { type: "string" }, w: { type: "number" } } } },
        rec: { type: "object", additionalProperties: { type: "number" } },
        any: {},
      },
      required: ["n", "b", "o", "l", "pick", "rows", "rec", "any"],
    };
    const capability = { ...capabilityOf("read"), input_schema: shape };
    for (const input of [
      { n: 3, b: false, o: { a: "x" }, l: ["p", "q"], pick: "b", rows: [{ p: "r", w: 1.5 }], rec: { k: 2 }, any: null },
      { n: -1, b: null, o: null, l: ["one line"], pick: "a", rows: [{ p: "s" }], rec: { k: 0 }, any: [1, { z: true }] },
    ]) {
      const again = againValues(storeWith(input), capability, ID);
      expect(again.kind === "filled" && [again.notice, again.values.has("raw_json")]).toEqual([`The form holds the input of ${ID}.`, false]);
      if (again.kind === "filled") expect(inputFromForm(formShape(shape), again.values)).toEqual({ ok: true, input });
    }
  });

  test("againValues keeps a value its unchanged field's control cannot show as it is (a list item with spaces at an edge, an empty one, a line break) in the raw JSON box, says why without claiming the input changed, and asks for a secret only when one was given", () => {
    const capability = {
      ...capabilityOf("read"),
      input_schema: {
        type: "object",
        properties: { text: { type: "string" }, lines: { type: "array", items: { type: "string" } }, token: { type: "string", writeOnly: true } },
        required: ["text"],
      },
    };
    for (const input of [{ text: "t", lines: ["x", " y ", "z\t"] }, { text: "t", lines: ["x", ""] }, { text: "t", lines: ["a\nb"] }, { text: "a\nb", lines: ["x"] }]) {
      const again = againValues(storeWith(input), capability, ID);
      expect(again.kind).toBe("filled");
      if (again.kind !== "filled") return;
      const [unfit, why] = input.text === "t" ? ["lines", "a list takes one value per line, each trimmed, none empty"] : ["text", "a one-line box takes no line break"];
      expect(again.notice).toContain(`The fields cannot show ${unfit} as it was (left empty): ${why}.`);
      expect(again.notice).not.toContain("changed since");
      expect(again.notice).not.toContain("token");
      expect(again.values.has(`input.${unfit}`)).toBe(false);
      // Sent as it is, the form sends the input as it was: the page shows the raw JSON box filled,
      // though the schema has a secret, since this input was given none.
      expect(inputFromForm(formShape(capability.input_schema), again.values)).toEqual({ ok: true, input });
      const page = (values: URLSearchParams) => parseHtml(String(CapabilityPage({ root: "/work/checkout", capability, values, errors: {}, problem: null, result: null, history: [], notice: again.notice })));
      expect(JSON.parse(page(again.values).querySelector('textarea[name="raw_json"]')!.textContent!)).toEqual(input);
      // Raw JSON that gives the secret is never shown back.
      const posted = new URLSearchParams({ raw_json: JSON.stringify({ ...input, token: "hunter2" }) });
      expect(page(posted).querySelector('textarea[name="raw_json"]')!.textContent!.trim()).toBe("");
    }
    // A secret given: it is asked for, and the raw JSON box (which would send "[redacted]") stays empty.
    const secret = againValues(storeWith({ text: "t", lines: ["x", ""], token: "[redacted]" }), capability, ID);
    expect(secret.kind === "filled" && [secret.values.has("raw_json"), secret.notice.endsWith(" Type token again: secrets are never stored.")]).toEqual([false, true]);
  });

  test("againValues leaves a stored moment whose wall time the server's clocks show twice out of its box, which would send only one of the two, and keeps it in the raw JSON box", () => {
    const zone = process.env.TZ;
    process.env.TZ = "Europe/Paris";
    try {
      const capability = { ...capabilityOf("read"), input_schema: { type: "object", properties: { ts: { type: "string", format: "date-time" } } } };
      for (const ts of ["2026-10-25T02:30:00+01:00", "2026-10-25T00:30:00Z"]) {
        const again = againValues(storeWith({ ts }), capability, ID);
        expect(again.kind === "filled" && [again.values.has("input.ts"), JSON.parse(again.values.get("raw_json")!)]).toEqual([false, { ts }]);
        expect(again.kind === "filled" && again.notice).toContain("The fields cannot show ts as it was (left empty): a date-and-time box holds the server's wall time, which its clocks show twice for that moment");
      }
      // An hour later the wall time is one moment again: the box holds it.
      const again = againValues(storeWith({ ts: "2026-10-25T03:30:00+01:00" }), capability, ID);
      expect(again.kind === "filled" && [again.values.get("input.ts"), again.notice]).toEqual(["2026-10-25T03:30:00", `The form holds the input of ${ID}.`]);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });
});

describe("Run again of values the form's controls would send back changed (cockpit tester, session 48)", () => {
  const capability: RegisteredCapability = {
    ...capabilityOf("read"),
    input_schema: {
      type: "object",
      properties: {
        rows: { type: "array", items: { type: "object", properties: { k: { type: "string" }, n: { type: "number" } }, required: ["k"] } },
        rec: { type: "object", additionalProperties: { type: "string" } },
        at: { type: "string", format: "date-time" },
        s_opt: { type: "string" },
        day: { type: "string", format: "date" },
        local: { type: "string", pattern: ISO_DATE_TIME_PATTERN },
        s_def: { type: "string", default: "dflt" },
        o_opt: { type: "object", properties: { a: { type: "string" } } },
        l_opt: { type: "array", items: { type: "string" } },
        rows_opt: { type: "array", items: { type: "object", properties: { k: { type: "string" } } } },
        rows_v: {
          type: "array",
          items: {
            type: "object",
            properties: {
              v: {
                anyOf: [
                  { type: "object", properties: { kind: { const: "a" } }, required: ["kind"] },
                  { type: "object", properties: { kind: { const: "b" }, x: { type: "string" } }, required: ["kind"] },
                ],
              },
            },
          },
        },
      },
      required: ["rows"],
    },
  };

  test.each([
    ["a moment finer than milliseconds, which the date-and-time box refuses (sent empty: the field was dropped)", { rows: [{ k: "a" }], at: "2026-06-01T10:00:00.123456Z" }, "at", "a date-and-time box holds a time to the millisecond, with a zone"],
    ["a record key with spaces at an edge (sent trimmed)", { rows: [{ k: "a" }], rec: { " sp ": "v " } }, 'rec[" sp "]', "a key's box is trimmed and takes no empty key"],
    ["an empty record key (refused: a value without a key)", { rows: [{ k: "a" }], rec: { "": "e" } }, 'rec[""]', "a key's box is trimmed and takes no empty key"],
    ["a row whose every box is empty (dropped as no row)", { rows: [{ k: "a" }, { k: "" }, { k: "c" }] }, "rows.1", "a row with every box empty is left out"],
    // The checking tester's, session 48: each came back absent, null, its default, or refused.
    ["an empty string in an optional box (sent as no value)", { rows: [{ k: "a" }], s_opt: "" }, "s_opt", "an empty box, list or group sends no value, not an empty one"],
    ["an empty string where a default stands (sent as the default)", { rows: [{ k: "a" }], s_def: "" }, "s_def", "an empty box, list or group sends no value, not an empty one"],
    ["an empty optional object", { rows: [{ k: "a" }], o_opt: {} }, "o_opt", "an empty box, list or group sends no value, not an empty one"],
    ["an empty optional list", { rows: [{ k: "a" }], l_opt: [] }, "l_opt", "an empty box, list or group sends no value, not an empty one"],
    ["an empty optional record", { rows: [{ k: "a" }], rec: {} }, "rec", "an empty box, list or group sends no value, not an empty one"],
    ["an empty optional list of rows", { rows: [{ k: "a" }], rows_opt: [] }, "rows_opt", "an empty box, list or group sends no value, not an empty one"],
    ["a record's value that is an empty string (refused as required)", { rows: [{ k: "a" }], rec: { k: "" } }, "rec.k", "an empty box, list or group sends no value, not an empty one"],
    ["a row holding only a variant's choice (dropped as no row)", { rows: [{ k: "a" }], rows_v: [{ v: { kind: "a" } }] }, "rows_v.0", "a row with every box empty is left out"],
    ["a moment before year 1, which the box takes no date of", { rows: [{ k: "a" }], at: "0000-06-01T00:00:00Z" }, "at", "a date-and-time box holds a time to the millisecond, with a zone"],
    ["a date before year 1 (round 2: dropped)", { rows: [{ k: "a" }], day: "0000-01-01" }, "day", "a date box takes no date before year 1"],
    ["a local date-time before year 1", { rows: [{ k: "a" }], local: "0000-01-01T00:00" }, "local", "a date box takes no date before year 1"],
  ])("%s is named and kept in the raw JSON box, which sends the input as it was", (_, input, path, why) => {
    const again = againValues(storeWith(input), capability, ID);
    expect(again.kind).toBe("filled");
    if (again.kind !== "filled") return;
    expect(again.notice).toMatch(new RegExp(`The fields cannot show (?:[^ ]+, )*${path.replace(/[.[\]"]/g, "\\$&")}(?:, [^ ]+)* as (?:it was|they were) \\(left empty\\): `));
    expect(again.notice).toContain(why);
    expect(JSON.parse(again.values.get("raw_json")!)).toEqual(input);
    expect(inputFromForm(formShape(capability.input_schema), again.values)).toEqual({ ok: true, input });
  });

  test("a moment to the millisecond, a trimmed key and rows with a box filled fit their controls: no raw JSON", () => {
    const input = { rows: [{ k: "a" }, { k: "b", n: 2 }], rec: { sp: " v " }, at: "2026-06-01T10:00:00.123Z", rows_v: [{ v: { kind: "b", x: "y" } }] };
    const again = againValues(storeWith(input), capability, ID);
    expect(again.kind === "filled" && [again.values.has("raw_json"), again.notice]).toEqual([false, `The form holds the input of ${ID}.`]);
  });
});

describe("Run again with more rows than the form draws", () => {
  /** team.look taking rows of files, each with a path and a number, nested rows of tags in each. */
  const withRows: RegisteredCapability = {
    ...capabilityOf("read"),
    input_schema: {
      type: "object",
      properties: {
        rows: { type: "array", items: { type: "object", properties: { path: { type: "string" }, n: { type: "number" }, tags: { type: "array", items: { type: "object", properties: { tag: { type: "string" } } } } } } },
      },
      required: ["rows"],
    },
  };

  test("the first 200 rows are fields; the others are kept as sent and sent again unchanged, so the page stays small (cockpit tester, session 46: 50,000 rows were a 40 MB page drawn for 5 s)", () => {
    const rows = Array.from({ length: 3000 }, (_, i) => ({ path: `src/file${i}.ts`, n: i, ...(i % 1000 === 999 ? { tags: [{ tag: `t${i}` }] } : {}) }));
    const again = againValues(storeWith({ rows }), withRows, ID);
    expect(again.kind).toBe("filled");
    if (again.kind !== "filled") return;
    const html = String(CapabilityPage({ root: "/work/checkout", capability: withRows, values: again.values, errors: {}, problem: null, result: null, history: [], notice: again.notice }));
    const doc = parseHtml(html);
    // 500 drawn and the spare; the rest are hidden controls, one per value.
    expect(doc.querySelectorAll('[data-rows="input.rows"] > ol > li.row').length).toBe(201);
    expect(doc.querySelector('[data-rows="input.rows"]')!.textContent).toContain("2,800 more rows (200 are shown at most, and those with a problem) are kept as they were and sent again with the form.");
    expect(html.length).toBeLessThan(1_000_000);
    // What a browser sends: every named control of the form, in document order.
    const sent = new URLSearchParams();
    for (const control of doc.querySelectorAll("form.run-form input[name], form.run-form textarea[name]")) {
      const element = control as HTMLInputElement;
      if (element.type === "checkbox" && !element.hasAttribute("checked")) continue;
      sent.append(element.getAttribute("name")!, element.tagName === "TEXTAREA" ? element.textContent ?? "" : element.getAttribute("value") ?? "");
    }
    const read = inputFromForm(formShape(withRows.input_schema)!, sent);
    expect(read.ok).toBe(true);
    if (read.ok) expect(read.input).toEqual({ rows });
  });
});

describe("Run again of an optional boolean that was false", () => {
  test("names it, since an unticked optional box sends nothing, and keeps the input in the raw JSON box: false came back absent (checking tester, session 46)", () => {
    const withFlag: RegisteredCapability = {
      ...capabilityOf("read"),
      input_schema: { type: "object", properties: { name: { type: "string" }, on: { type: "boolean" }, must: { type: "boolean" } }, required: ["name", "must"] },
    };
    const input = { name: "a", on: false, must: false };
    const again = againValues(storeWith(input), withFlag, ID);
    expect(again.kind).toBe("filled");
    if (again.kind !== "filled") return;
    expect(again.notice).toContain("an optional box left unticked sends no value, not false");
    expect(JSON.parse(again.values.get("raw_json")!)).toEqual(input);
    // A required box unticked is false: it fits.
    const required = againValues(storeWith({ name: "a", must: false }), withFlag, ID);
    expect(required.kind === "filled" && required.values.has("raw_json")).toBe(false);
  });
});

describe("Run again of a field that held a secret when it ran and is no longer marked sensitive", () => {
  /** team.look after its `token` (and a JSON `config` that held one) lost sensitive(). */
  const unmarked: RegisteredCapability = {
    ...capabilityOf("read"),
    input_schema: { type: "object", properties: { name: { type: "string" }, token: { type: "string" }, config: {}, gone_renamed: { type: "string" } }, required: ["name"] },
  };

  test("asks for it again rather than filling in the stored \"[redacted]\", which would run as its value (cockpit tester, session 50)", () => {
    const again = againValues(storeWith({ name: "n1", token: "[redacted]", config: { auth: { key: "[redacted]" }, region: "eu" } }), unmarked, ID);
    expect(again.kind).toBe("filled");
    if (again.kind !== "filled") return;
    expect(again.values.get("input.name")).toBe("n1");
    expect(again.values.has("input.token")).toBe(false);
    expect(again.values.has("input.config")).toBe(false);
    expect(again.values.getAll("type_again")).toEqual(["input.token", "input.config"]);
    expect(again.notice).toContain("Type token, config again: secrets are never stored.");
    // Sent as it is now, the form runs nothing: the two boxes must be typed first.
    const doc = parseHtml(String(CapabilityPage({ root: "/work/checkout", capability: unmarked, values: again.values, errors: {}, problem: null, result: null, history: [], notice: again.notice })));
    expect(doc.querySelector('input[name="input.token"]')!.getAttribute("value") ?? "").toBe("");
    expect(doc.querySelector('input[name="input.token"]')!.hasAttribute("required")).toBe(true);
  });

  test("asks again for a whole group that was the secret (an object, a record, rows of secrets, a nullable object), never filling it empty (checking tester, session 50: {} and [] ran)", () => {
    const groups: RegisteredCapability = {
      ...capabilityOf("read"),
      input_schema: {
        type: "object",
        properties: {
          name: { type: "string" },
          wholeobj: { type: "object", properties: { a: { type: "string" } } },
          wholerec: { type: "object", additionalProperties: { type: "string" } },
          rowitems: { type: "array", items: { type: "object", properties: { x: { type: "string" } } } },
          nullableobj: { anyOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { type: "null" }] },
        },
        required: ["name", "wholeobj", "wholerec", "rowitems", "nullableobj"],
      },
    };
    const again = againValues(storeWith({ name: "n", wholeobj: "[redacted]", wholerec: "[redacted]", rowitems: ["[redacted]", "[redacted]"], nullableobj: "[redacted]" }), groups, ID);
    expect(again.kind).toBe("filled");
    if (again.kind !== "filled") return;
    expect(again.values.get("input.name")).toBe("n");
    const asked = again.values.getAll("type_again");
    expect(asked).toEqual(expect.arrayContaining(["input.wholeobj", "input.wholerec", "input.rowitems"]));
    expect(again.notice).toContain("secrets are never stored");
    expect(again.notice).not.toContain("left empty");
    expect(again.values.has("raw_json")).toBe(false);
  });

  test("never puts a stored \"[redacted]\" in the raw JSON box, even of a member the form has no field for", () => {
    const again = againValues(storeWith({ name: "n1", old_token: "[redacted]" }), unmarked, ID);
    expect(again.kind === "filled" && again.values.has("raw_json")).toBe(false);
    const raw: RegisteredCapability = { ...capabilityOf("read"), input_schema: {} };
    const whole = againValues(storeWith({ key: "[redacted]" }), raw, ID);
    expect(whole.kind === "filled" && [whole.values.has("raw_json"), whole.notice.includes("Type the input again")]).toEqual([false, true]);
  });
});

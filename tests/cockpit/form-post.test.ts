import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { closeParsed, parseHtml, textOf } from "./_support/html.ts";

/** Rows of objects: the output lists every path it was given, in order. */
const ROWS = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.rows", title: "Rows", description: "Lists the paths of its rows.", effect: "read",
  input: v.object({ rows: v.array(v.object({ path: v.string(), weight: v.optional(v.number()) })) }),
  output: v.object({ paths: v.array(v.string()) }),
  handler(input) {
    return { paths: input.rows.map((row) => row.path) };
  },
});
`;

/** Property names that hold the separator (and its escape, and a dash) beside an object holding the same path. */
const NAMES = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.names", title: "Names", description: "Gives its input back.", effect: "read",
  input: v.object({ "a.b": v.optional(v.string()), "a~1b": v.optional(v.string()), "a-b": v.optional(v.string()), a: v.optional(v.object({ b: v.optional(v.string()) })) }),
  output: v.any(),
  handler(input) {
    return input;
  },
});
`;

/** Properties named as the form's stand-in for a row's index, at the top, in an object and in rows. */
const ROW_NAMED = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.row-named", title: "Row named", description: "Gives its input back.", effect: "read",
  input: v.object({
    __row__: v.optional(v.string()),
    __row__x: v.optional(v.string()),
    obj: v.optional(v.object({ __row__: v.optional(v.string()) })),
    rows: v.optional(v.array(v.object({ __row__: v.optional(v.string()) }))),
  }),
  output: v.any(),
  handler(input) {
    return input;
  },
});
`;

/** Optional fields named as Object.prototype's members. */
const PROTO = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.proto", title: "Proto", description: "Says which of its fields it was given.", effect: "read",
  input: v.object({
    name: v.string(),
    toString: v.optional(v.string()),
    constructor: v.optional(v.number()),
    valueOf: v.optional(v.boolean()),
    hasOwnProperty: v.optional(v.string()),
  }),
  output: v.object({ own: v.array(v.string()), polluted: v.boolean() }),
  handler(input) {
    return { own: Object.keys(input), polluted: "polluted" in {} || "polluted" in input };
  },
});
`;

/** A moment (RFC 3339 date-time, which needs a zone) given back as it arrived. */
const MOMENT = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.moment", title: "Moment", description: "Gives its moment back.", effect: "read",
  input: v.object({ ts: v.pipe(v.string(), v.isoTimestamp()) }),
  output: v.object({ ts: v.string() }),
  handler(input) {
    return { ts: input.ts };
  },
});
`;

/** Required fields that may be null: left empty, each is sent as null. */
const MAYBE = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.maybe", title: "Maybe", description: "Gives its input back.", effect: "read",
  input: v.object({ maybe: v.nullable(v.string()), count: v.nullable(v.number()), pick: v.nullable(v.picklist(["a", "b"])), day: v.nullable(v.pipe(v.string(), v.isoDate())) }),
  output: v.any(),
  handler(input) {
    return input;
  },
});
`;

/** Required groups and a boolean that may be null: left empty, each is sent as null too. */
const MAYBE_GROUPS = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.maybe-groups", title: "Maybe groups", description: "Gives its input back.", effect: "read",
  input: v.object({
    o: v.nullable(v.object({ a: v.string() })),
    b: v.nullable(v.boolean()),
    l: v.nullable(v.array(v.string())),
    c: v.nullable(v.array(v.picklist(["x", "y"]))),
    rows: v.nullable(v.array(v.object({ p: v.string() }))),
    rec: v.nullable(v.record(v.string(), v.number())),
    t: v.nullable(v.variant("kind", [v.object({ kind: v.literal("one"), n: v.number() }), v.object({ kind: v.literal("two") })])),
  }),
  output: v.any(),
  handler(input) {
    return input;
  },
});
`;

let server: CockpitServer;

beforeAll(async () => {
  server = await startCockpitServer({}, { "team.rows.ts": ROWS, "team.names.ts": NAMES, "team.proto.ts": PROTO, "team.moment.ts": MOMENT, "team.maybe.ts": MAYBE, "team.maybe-groups.ts": MAYBE_GROUPS, "team.row-named.ts": ROW_NAMED });
});

afterAll(async () => {
  await closeParsed();
  await server.stop();
});

/** `count` rows of team.rows's form, `input.rows.<i>.path` = `p<i>`. */
function rowsForm(count: number): Record<string, string | string[]> {
  const form: Record<string, string> = { mode: "call" };
  for (let i = 0; i < count; i++) form[`input.rows.${i}.path`] = `p${i}`;
  return form;
}

const outputOf = async (response: Response) => JSON.parse(textOf(parseHtml(await response.text()), '[data-slot="result"]')!);

describe("cockpit form post", () => {
  test("a form sent with a Content-Encoding is refused 415 naming it, never read as fields", async () => {
    const response = await server.post("/cockpit/capabilities/team.rows", rowsForm(2), { "content-encoding": "gzip" });
    expect(response.status).toBe(415);
    expect(await response.text()).toContain("Content-Encoding &quot;gzip&quot;, which docket does not decode: post it uncompressed.");
  });

  test("a posted form reads every row it holds, past a thousand and at any index", async () => {
    const form = { ...rowsForm(1500), "input.rows.9007199254740991.path": "far" };
    const response = await server.post("/cockpit/capabilities/team.rows", form);
    expect(response.status).toBe(200);
    const { paths } = await outputOf(response);
    expect(paths).toHaveLength(1501);
    expect(paths.slice(998, 1002)).toEqual(["p998", "p999", "p1000", "p1001"]);
    expect(paths.slice(-2)).toEqual(["p1499", "far"]);
  });

  test("a form sending a field the input no longer has (a page made before its file changed), or a row index no form writes, runs nothing and says which (MCP tester, session 41)", async () => {
    for (const [stray, value] of [["input.name", "important"], ["input.rows.-1.path", "x"], ["input.rows.01.path", "x"], ["input.rows.abc.path", "x"], ["input.rows.1e3.path", "x"], ["input.rows.0.colour", "x"], ["input.rows.9007199254740992.path", "x"]]) {
      const response = await server.post("/cockpit/capabilities/team.rows", { ...rowsForm(1), [stray!]: value! });
      expect(`${stray}: ${response.status}`).toBe(`${stray}: 400`);
      const problem = textOf(parseHtml(await response.text()), '[data-slot="problem"]');
      expect(problem).toContain(`The form sent ${JSON.stringify(stray)}, which is no field of this capability's input as it is now`);
      expect(problem).toContain("Nothing ran.");
    }
    // The fields a form of every shape writes are still taken: rows at any index, a variant's chooser and its shapes' fields.
    expect((await server.post("/cockpit/capabilities/team.rows", { ...rowsForm(2), "input.rows.1.weight": "2" })).status).toBe(200);
    const groups = await server.post("/cockpit/capabilities/team.maybe-groups", { mode: "call", "input.t.variant": "0", "input.t.v0.n": "3", "input.rows.0.p": "a", "input.rec.0.key": "k", "input.rec.0.value": "1" });
    expect(groups.status).toBe(200);
  });

  test("a problem in row 1,201 is shown next to that row's field, drawn with the first 200 rows; every other row is kept as sent and sent again (cockpit tester, session 46: drawing 100,000 rows held the server for seconds)", async () => {
    const response = await server.post("/cockpit/capabilities/team.rows", { ...rowsForm(1500), "input.rows.1200.weight": "heavy" });
    expect(response.status).toBe(400);
    const doc = parseHtml(await response.text());
    expect(doc.querySelector('[name="input.rows.1200.weight"]')?.getAttribute("aria-invalid")).toBe("true");
    expect(doc.querySelector('[name="input.rows.1200.weight"]')?.getAttribute("value")).toBe("heavy");
    expect(textOf(doc, '[data-slot="problem"]')).toContain('weight must be a number, got "heavy". rows has problems in row 1201.');
    expect(textOf(doc, '[data-field="rows"] > .field-error')).toBe("✕ rows has problems in row 1201.");
    // The first 200 rows, the one with the problem, and one spare; the others as hidden controls, each value once.
    expect(doc.querySelectorAll('[data-rows="input.rows"] > .row-list > .row')).toHaveLength(202);
    expect([...doc.querySelectorAll('[data-rows="input.rows"] > .row-list > .row')].map((row) => row.getAttribute("data-row")).slice(198)).toEqual(["198", "199", "1200", "1500"]);
    expect(doc.querySelector('[name="input.rows.1499.path"]')?.getAttribute("type")).toBe("hidden");
    expect(doc.querySelector('[name="input.rows.1499.path"]')?.getAttribute("value")).toBe("p1499");
    expect(doc.querySelectorAll('input[type="hidden"][name^="input.rows."]')).toHaveLength(1299);
    expect(textOf(doc, '[data-rows="input.rows"]')).toContain("1,299 more rows (200 are shown at most, and those with a problem) are kept as they were and sent again with the form.");
    // Sent again with the problem fixed, every row is read in order.
    const again = new URLSearchParams();
    for (const control of doc.querySelectorAll("form.run-form input[name]")) {
      const name = control.getAttribute("name")!;
      again.append(name, name === "input.rows.1200.weight" ? "7" : (control.getAttribute("value") ?? ""));
    }
    again.set("mode", "call");
    const fixed = await server.post("/cockpit/capabilities/team.rows", Object.fromEntries([...again.keys()].map((key) => [key, again.getAll(key)])));
    expect(fixed.status).toBe(200);
    const { paths } = await outputOf(fixed);
    expect(paths).toHaveLength(1500);
    expect(paths.at(-1)).toBe("p1499");
  });

  test("a property named \"a.b\" (or a~1b, or a-b) and the field b of an object a get controls and ids of their own, and each value lands in its own field", async () => {
    const doc = parseHtml((await server.page("/cockpit/capabilities/team.names")).html);
    const control = (selector: string) => doc.querySelector(`${selector} input`) as HTMLInputElement;
    const flat = control('.fields > [data-field="a.b"]');
    const tilde = control('.fields > [data-field="a~1b"]');
    const dash = control('.fields > [data-field="a-b"]');
    const nested = control('.fields > [data-field="a"] [data-field="b"]');
    // The ordinary name reads as it always did; the others are escaped.
    expect(nested.name).toBe("input.a.b");
    expect(dash.name).toBe("input.a-b");
    expect(new Set([flat.name, tilde.name, dash.name, nested.name]).size).toBe(4);
    // Ids too: a label finds its own control, and `a-b` is not `a.b`.
    expect(new Set([flat.id, tilde.id, dash.id, nested.id]).size).toBe(4);
    for (const input of [flat, tilde, dash, nested]) expect(doc.querySelectorAll(`label[for="${input.id}"]`)).toHaveLength(1);

    const response = await server.post("/cockpit/capabilities/team.names", { mode: "call", [flat.name]: "flat", [tilde.name]: "tilde", [dash.name]: "dash", [nested.name]: "nested" });
    expect(response.status).toBe(200);
    expect(await outputOf(response)).toEqual({ "a.b": "flat", "a~1b": "tilde", "a-b": "dash", a: { b: "nested" } });
  });

  test("a property named __row__ (or beginning so), at the top, in an object and in rows, is a field of its own, not a row's index (cockpit tester, session 50)", async () => {
    const doc = parseHtml((await server.page("/cockpit/capabilities/team.row-named")).html);
    const top = doc.querySelector('.fields > [data-field="__row__"] input') as HTMLInputElement;
    const prefixed = doc.querySelector('.fields > [data-field="__row__x"] input') as HTMLInputElement;
    const inObject = doc.querySelector('.fields > [data-field="obj"] [data-field="__row__"] input') as HTMLInputElement;
    const template = doc.querySelector('template[data-row-template="input.rows"]') as HTMLTemplateElement;
    const inRow = template.content.querySelector('[data-field="__row__"] input') as HTMLInputElement;
    expect([top.name, prefixed.name, inObject.name, inRow.name]).toEqual(["input.~2_row__", "input.~2_row__x", "input.obj.~2_row__", "input.rows.__row__.~2_row__"]);
    const row = inRow.name.replace("input.rows.__row__.", "input.rows.0.");
    const response = await server.post("/cockpit/capabilities/team.row-named", { mode: "call", [top.name]: "top", [prefixed.name]: "x", [inObject.name]: "o", [row]: "r" });
    expect(response.status).toBe(200);
    expect(await outputOf(response)).toEqual({ __row__: "top", __row__x: "x", obj: { __row__: "o" }, rows: [{ __row__: "r" }] });
  });

  test("optional fields named toString, constructor, valueOf and hasOwnProperty run when absent, and a wrong one is refused by name", async () => {
    const absent = await server.post("/cockpit/capabilities/team.proto", { mode: "call", "input.name": "n" });
    expect(absent.status).toBe(200);
    expect(await outputOf(absent)).toEqual({ own: ["name"], polluted: false });

    const present = await server.post("/cockpit/capabilities/team.proto", { mode: "call", "input.name": "n", "input.toString": "t", "input.constructor": "3" });
    expect(await outputOf(present)).toEqual({ own: ["name", "toString", "constructor"], polluted: false });

    const wrong = await server.post("/cockpit/capabilities/team.proto", { mode: "call", raw_json: '{"name": "n", "toString": 5, "valueOf": "yes"}' });
    expect(wrong.status).toBe(400);
    const message = textOf(parseHtml(await wrong.text()), '[data-failure-field="message"]')!;
    expect(message).toContain("input.toString: Invalid type: Expected string but received 5");
    expect(message).toContain('input.valueOf: Invalid type: Expected boolean but received "yes"');
  });

  test("__proto__ in a posted JSON input is a member like any other, and pollutes nothing", async () => {
    const response = await server.post("/cockpit/capabilities/team.proto", { mode: "call", raw_json: '{"name": "n", "__proto__": {"polluted": true, "toString": "x"}}' });
    expect(response.status).toBe(200);
    expect(await outputOf(response)).toEqual({ own: ["name"], polluted: false });
    expect("polluted" in {}).toBe(false);
  });

  test("a date-time field's box takes seconds, says the zone it is read in, and what it sends passes v.isoTimestamp()", async () => {
    const doc = parseHtml((await server.page("/cockpit/capabilities/team.moment")).html);
    const box = doc.querySelector('[name="input.ts"]')!;
    expect([box.getAttribute("type"), box.getAttribute("step")]).toEqual(["datetime-local", "1"]);
    expect(textOf(doc, '[data-field="ts"] .help')).toContain("in the server's time zone");

    for (const [typed, local] of [
      ["2026-12-03T10:11", new Date(2026, 11, 3, 10, 11)],
      ["2026-12-03T10:11:05", new Date(2026, 11, 3, 10, 11, 5)],
    ] as const) {
      const response = await server.post("/cockpit/capabilities/team.moment", { mode: "call", "input.ts": typed });
      expect(response.status).toBe(200);
      expect(Date.parse((await outputOf(response)).ts)).toBe(local.getTime());
    }
  });

  test("a required field that may be null carries no required attribute, and sent empty it is null", async () => {
    const doc = parseHtml((await server.page("/cockpit/capabilities/team.maybe")).html);
    for (const name of ["maybe", "count", "pick", "day"]) {
      const control = doc.querySelector(`[name="input.${name}"]`)!;
      expect({ name, required: control.hasAttribute("required") }).toEqual({ name, required: false });
      expect(textOf(doc, `[data-field="${name}"] .help`)).toContain("left empty, it is sent as null");
    }
    const response = await server.post("/cockpit/capabilities/team.maybe", { mode: "call", "input.maybe": "", "input.count": "", "input.pick": "", "input.day": "" });
    expect(response.status).toBe(200);
    expect(await outputOf(response)).toEqual({ maybe: null, count: null, pick: null, day: null });
  });

  test("a required group or boolean that may be null blocks no empty form, says so, and sent empty it is null", async () => {
    const doc = parseHtml((await server.page("/cockpit/capabilities/team.maybe-groups")).html);
    expect([...doc.querySelectorAll("form [required]")].map((control) => control.getAttribute("name"))).toEqual([]);
    for (const name of ["o", "b", "l", "c", "rows", "rec", "t"]) expect(textOf(doc, `[data-field="${name}"] > .help`)).toContain("left empty, it is sent as null");
    expect(textOf(doc, '[data-field="l"] > .help')).toContain("([] only through the raw JSON box)");
    expect(textOf(doc, '[data-field="rec"] > .help')).toContain("({} only through the raw JSON box)");
    // The boolean is a select of true and false whose empty choice is null; the union has a null choice.
    expect([...doc.querySelectorAll('select[name="input.b"] option')].map((option) => [option.getAttribute("value"), option.textContent])).toEqual([
      ["", "— null —"],
      ["true", "true"],
      ["false", "false"],
    ]);
    expect(doc.querySelector('input[type="radio"][name="input.t.variant"][value=""]')?.parentElement?.textContent).toBe("null");
    const empty = await server.post("/cockpit/capabilities/team.maybe-groups", { mode: "call", "input.o.a": "", "input.b": "", "input.l": "", "input.rows.0.p": "", "input.rec.0.key": "", "input.rec.0.value": "", "input.t.variant": "" });
    expect(empty.status).toBe(200);
    expect(await outputOf(empty)).toEqual({ o: null, b: null, l: null, c: null, rows: null, rec: null, t: null });
    const filled = await server.post("/cockpit/capabilities/team.maybe-groups", {
      mode: "call",
      "input.o.a": "x",
      "input.b": "false",
      "input.l": "p\nq",
      "input.c": ["\"y\""],
      "input.rows.0.p": "r",
      "input.rec.0.key": "k",
      "input.rec.0.value": "1",
      "input.t.variant": "0",
      "input.t.v0.n": "2",
    });
    expect(filled.status).toBe(200);
    expect(await outputOf(filled)).toEqual({ o: { a: "x" }, b: false, l: ["p", "q"], c: ["y"], rows: [{ p: "r" }], rec: { k: 1 }, t: { kind: "one", n: 2 } });
  });
});

import { afterEach, describe, expect, test } from "bun:test";
import { loadPage, type LoadedPage } from "./_support/dom.ts";
import { capabilityHtml, capabilityOf } from "./_support/fixtures.ts";
import { formShape } from "../../cockpit/form-fields.ts";
import { inputFromForm } from "../../cockpit/form-input.ts";

const pages: LoadedPage[] = [];
afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
});

const SCHEMA = {
  type: "object",
  properties: {
    rows: { type: "array", items: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
    target: {
      oneOf: [
        { type: "object", properties: { kind: { const: "branch" }, name: { type: "string" } }, required: ["kind", "name"] },
        { type: "object", properties: { kind: { const: "tag" }, version: { type: "string" } }, required: ["kind", "version"] },
      ],
    },
  },
  required: ["target"],
};

function page() {
  const capability = { ...capabilityOf("read"), input_schema: SCHEMA };
  const loaded = loadPage(capabilityHtml(capability), { path: "/cockpit/capabilities/team.look", scripts: ["run-form.js"] });
  pages.push(loaded);
  return loaded.document;
}

/** What the form would send now, as the server reads it (by `schema`, SCHEMA unless said). */
function sent(doc: Document, schema: Parameters<typeof formShape>[0] = SCHEMA): unknown {
  const form = doc.querySelector("form[data-docket-run]") as HTMLFormElement;
  const values = new URLSearchParams();
  for (const element of form.querySelectorAll("input, select, textarea")) {
    const control = element as HTMLInputElement;
    if (!control.name || control.disabled || control.closest("template") || control.closest("fieldset[disabled]")) continue;
    if ((control.type === "radio" || control.type === "checkbox") && !control.checked) continue;
    values.append(control.name, control.value);
  }
  return inputFromForm(formShape(schema), values);
}

describe("run-form.js: rows and variants", () => {
  test("Add a row clones the row template with the next index, and the new row is read", () => {
    const doc = page();
    const add = doc.querySelector('[data-add-row="input.rows"]') as HTMLButtonElement;
    expect(add.hidden).toBe(false);
    (doc.querySelector('[name="input.rows.0.path"]') as HTMLInputElement).value = "src";
    add.click();
    add.click();
    expect([...doc.querySelectorAll(".row-list > .row")].map((row) => row.getAttribute("data-row"))).toEqual(["0", "1", "2"]);
    const third = doc.querySelector('[name="input.rows.2.path"]') as HTMLInputElement;
    expect(third.id).toBe("field-input-rows-2-path");
    expect(doc.querySelector('label[for="field-input-rows-2-path"]')).not.toBeNull();
    third.value = "docs";
    const branch = doc.querySelector('[name="input.target.variant"][value="0"]') as HTMLInputElement;
    branch.checked = true;
    branch.dispatchEvent(new (doc.defaultView as unknown as { Event: typeof Event }).Event("change"));
    (doc.querySelector('[name="input.target.v0.name"]') as HTMLInputElement).value = "main";
    expect(sent(doc)).toEqual({ ok: true, input: { rows: [{ path: "src" }, { path: "docs" }], target: { kind: "branch", name: "main" } } });
  });

  test("Add a row gives fields whose names hold a dot or a dash the ids the server would, so their labels still find them", () => {
    const capability = { ...capabilityOf("read"), input_schema: { type: "object", properties: { "my.rows": { type: "array", items: { type: "object", properties: { "a.b": { type: "string" }, "a-b": { type: "string" } } } } } } };
    const loaded = loadPage(capabilityHtml(capability), { path: "/cockpit/capabilities/team.look", scripts: ["run-form.js"] });
    pages.push(loaded);
    const doc = loaded.document;
    (doc.querySelector('[data-add-row="input.my~1rows"]') as HTMLButtonElement).click();
    const added = [...doc.querySelectorAll('.row[data-row="1"] input')] as HTMLInputElement[];
    expect(added.map((input) => input.name)).toEqual(["input.my~1rows.1.a~1b", "input.my~1rows.1.a-b"]);
    const served = [...doc.querySelectorAll('.row[data-row="0"] input')].map((input) => input.id);
    expect(added.map((input) => input.id)).toEqual(served.map((id) => id.replace("rows-0-", "rows-1-")));
    for (const input of added) expect(doc.querySelectorAll(`label[for="${input.id}"]`)).toHaveLength(1);
  });

  test("a list inside a row added, and a variant inside it, get the row's index: their rows are read, their shapes shown (checking tester, session 41)", () => {
    const pick = { oneOf: [{ type: "object", properties: { kind: { const: "x" }, xv: { type: "string" } }, required: ["kind", "xv"] }, { type: "object", properties: { kind: { const: "y" } }, required: ["kind"] }] };
    const schema = { type: "object", properties: { groups: { type: "array", items: { type: "object", properties: { items: { type: "array", items: { type: "object", properties: { k: { type: "string" } } } }, pick } } } } };
    const loaded = loadPage(capabilityHtml({ ...capabilityOf("read"), input_schema: schema }), { path: "/cockpit/capabilities/team.look", scripts: ["run-form.js"] });
    pages.push(loaded);
    const doc = loaded.document;
    const change = () => new (doc.defaultView as unknown as { Event: typeof Event }).Event("change");
    (doc.querySelector('[data-add-row="input.groups"]') as HTMLButtonElement).click();
    const inner = doc.querySelector('[data-add-row="input.groups.1.items"]') as HTMLButtonElement | null;
    expect(inner).not.toBeNull();
    inner!.click();
    const added = doc.querySelector('[name="input.groups.1.items.1.k"]') as HTMLInputElement | null;
    expect(added).not.toBeNull();
    added!.value = "deep";
    (doc.querySelector('[name="input.groups.1.items.0.k"]') as HTMLInputElement).value = "first";
    const x = doc.querySelector('[name="input.groups.1.pick.variant"][value="0"]') as HTMLInputElement;
    x.checked = true;
    x.dispatchEvent(change());
    expect((doc.querySelector('[data-variants="input.groups.1.pick"] > fieldset[data-variant="0"]') as HTMLFieldSetElement).hidden).toBe(false);
    (doc.querySelector('[name="input.groups.1.pick.v0.xv"]') as HTMLInputElement).value = "chosen";
    expect(doc.querySelectorAll('[name*="__row__"]:not(template *)').length).toBe(0);
    expect(sent(doc, schema)).toEqual({ ok: true, input: { groups: [{ items: [{ k: "first" }, { k: "deep" }], pick: { kind: "x", xv: "chosen" } }] } });
  });

  test("a row added in a row added whose path repeats the outer one's gets names of its own, and a property named with a quote still gets its Add a row (checking tester, session 41)", () => {
    const schema = {
      type: "object",
      properties: {
        a: { type: "array", items: { type: "object", properties: { n: { type: "string" }, input: { type: "object", properties: { a: { type: "array", items: { type: "object", properties: { c: { type: "string" } } } } } } } } },
        'we"ird': { type: "array", items: { type: "object", properties: { q: { type: "string" } } } },
      },
    };
    const loaded = loadPage(capabilityHtml({ ...capabilityOf("read"), input_schema: schema }), { path: "/cockpit/capabilities/team.look", scripts: ["run-form.js"] });
    pages.push(loaded);
    const doc = loaded.document;
    const button = (control: string) => [...doc.querySelectorAll("[data-add-row]")].find((b) => b.getAttribute("data-add-row") === control) as HTMLButtonElement | undefined;
    button("input.a")!.click();
    button("input.a.1.input.a")!.click();
    button("input.a.1.input.a")!.click();
    const names = [...doc.querySelectorAll("input")].map((i) => (i as HTMLInputElement).name).filter((n) => n.startsWith("input.a.1.input.a.") && !n.includes("__row__"));
    expect(names).toEqual(["input.a.1.input.a.0.c", "input.a.1.input.a.1.c", "input.a.1.input.a.2.c"]);
    expect(button('input.we"ird')?.hidden).toBe(false);
    button('input.we"ird')!.click();
    expect([...doc.querySelectorAll("input")].some((i) => (i as HTMLInputElement).name === 'input.we"ird.1.q')).toBe(true);
  });

  test("an array or a record of sensitive strings is typed as JSON into a password box, never a textarea that shows it", () => {
    const sensitiveString = { type: "string", "x-docket-sensitive": true };
    const capability = { ...capabilityOf("read"), input_schema: { type: "object", properties: { tokens: { type: "array", items: sensitiveString }, keys: { type: "object", additionalProperties: sensitiveString } } } };
    const doc = loadPage(capabilityHtml(capability), { path: "/cockpit/capabilities/team.look", scripts: [] });
    pages.push(doc);
    for (const name of ["input.tokens", "input.keys"]) {
      const control = doc.document.querySelector(`[name="${name}"]`) as HTMLInputElement | null;
      expect({ name, tag: control?.tagName.toLowerCase(), type: control?.getAttribute("type") }).toEqual({ name, tag: "input", type: "password" });
    }
  });

  test("the help under rows and under a record's entries says their plural right", () => {
    const capability = { ...capabilityOf("read"), input_schema: { type: "object", properties: { rows: SCHEMA.properties.rows, tags: { type: "object", additionalProperties: { type: "string" } } } } };
    const html = capabilityHtml(capability);
    expect(html).toContain("Empty rows are left out.");
    expect(html).toContain("Empty entries are left out.");
    expect(html).not.toContain("entrys");
  });

  test("the variant chooser shows only the chosen shape and disables the others", () => {
    const doc = page();
    const shapes = () => [...doc.querySelectorAll("fieldset[data-variant]")].map((f) => (f as HTMLFieldSetElement).hidden);
    expect(shapes()).toEqual([true, true]);
    const tag = doc.querySelector('[name="input.target.variant"][value="1"]') as HTMLInputElement;
    tag.checked = true;
    tag.dispatchEvent(new (doc.defaultView as unknown as { Event: typeof Event }).Event("change"));
    expect(shapes()).toEqual([true, false]);
    expect((doc.querySelector('fieldset[data-variant="0"]') as HTMLFieldSetElement).disabled).toBe(true);
    (doc.querySelector('[name="input.target.v1.version"]') as HTMLInputElement).value = "v1";
    expect(sent(doc)).toEqual({ ok: true, input: { target: { kind: "tag", version: "v1" } } });
  });

  test("a union that may be null has a null choice, which hides every shape and sends null after one was chosen", () => {
    const schema = { ...SCHEMA, properties: { ...SCHEMA.properties, target: { anyOf: [SCHEMA.properties.target, { type: "null" }] } } };
    const capability = { ...capabilityOf("read"), input_schema: schema };
    const loaded = loadPage(capabilityHtml(capability), { path: "/cockpit/capabilities/team.look", scripts: ["run-form.js"] });
    pages.push(loaded);
    const doc = loaded.document;
    const choose = (value: string) => {
      (doc.querySelector(`[name="input.target.variant"][value="${value}"]`) as HTMLInputElement).click();
    };
    const shapes = () => [...doc.querySelectorAll("fieldset[data-variant]")].map((f) => (f as HTMLFieldSetElement).hidden);
    choose("0");
    (doc.querySelector('[name="input.target.v0.name"]') as HTMLInputElement).value = "main";
    expect(shapes()).toEqual([false, true]);
    choose("");
    expect(shapes()).toEqual([true, true]);
    expect(sent(doc, schema)).toEqual({ ok: true, input: { target: null } });
  });
});

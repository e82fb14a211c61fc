import { afterAll, describe, expect, test } from "bun:test";
import type { RegisteredCapability } from "../../runtime/capability/registered.ts";
import type { ExecutionStore } from "../../runtime/store/store.ts";
import { againValues } from "../../cockpit/run-again.ts";
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
});

import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { capability, type CapabilityDef } from "../../runtime/capability/declaration.ts";
import { CapabilityRegistry } from "../../runtime/capability/registry.ts";
import { sensitive } from "../../runtime/capability/sensitive.ts";

function def(overrides: Record<string, unknown> = {}): CapabilityDef {
  return {
    ...capability({
      id: "files.count",
      title: "Count files",
      description: "Counts files.",
      effect: "read",
      input: v.object({ path: v.optional(v.string(), ".") }),
      output: v.object({ files: v.number() }),
      handler: () => ({ files: 0 }),
    }),
    ...overrides,
  } as CapabilityDef;
}

const file = (name: string) => ({ kind: "file" as const, file: `/work/x/capabilities/${name}` });

describe("CapabilityRegistry", () => {
  test("CapabilityRegistry.add registers a sound declaration with its JSON Schemas", () => {
    const registry = new CapabilityRegistry();
    const added = registry.add(def({ cancellable: true, timeout_ms: 5000, errors: ["too_many"], examples: [{ path: "src" }] }), file("files.count.ts"));
    expect(added).not.toBeNull();
    expect(registry.get("files.count")).toBe(added!);
    expect(added).toMatchObject({
      id: "files.count",
      effect: "read",
      cancellable: true,
      timeout_ms: 5000,
      cache: null,
      execution: "allowed",
      errors: ["too_many"],
      examples: [{ path: "src" }],
      plane: false,
    });
    expect(added!.input_schema.properties).toEqual({ path: { type: "string", default: "." } });
    expect(registry.loadErrors()).toEqual([]);
  });

  test("CapabilityRegistry.add registers the title and description without escape sequences, controls or bidi overrides: every surface shows them, a terminal's included", () => {
    const registry = new CapabilityRegistry();
    const added = registry.add(def({ title: "Count \u001b[31mred\u001b[0m files \u001b]0;pwned\u0007\u202e", description: "Counts\u001b[2J files.\n\n- in\tfolders" }), file("files.count.ts"));
    expect({ title: added!.title, description: added!.description }).toEqual({ title: "Count red files ", description: "Counts files.\n\n- in\tfolders" });
  });

  test("CapabilityRegistry keeps a load error's reason (what a file threw) as plain text", () => {
    const registry = new CapabilityRegistry();
    registry.addLoadError({ file: "/work/x/capabilities/a.ts", line: 1, column: 1, reason: "it threw while loading: \u001b[31mfailed\u001b[0m \u001b]0;pwned\u0007\u202eRTL" });
    expect(registry.loadErrors()[0]!.reason).toBe("it threw while loading: failed RTL");
  });

  test("CapabilityRegistry.list is sorted by id", () => {
    const registry = new CapabilityRegistry();
    for (const id of ["zeta.run", "alpha.run", "mid.run"]) registry.add(def({ id }), { kind: "builtin", file: `${id}.ts` });
    expect(registry.list().map((c) => c.id)).toEqual(["alpha.run", "mid.run", "zeta.run"]);
  });

  test("CapabilityRegistry.add marks only built-ins with execution never as plane", () => {
    const registry = new CapabilityRegistry();
    registry.add(def({ id: "plane.get", execution: "never" }), { kind: "builtin", file: "plane.get.ts" });
    registry.add(def({ id: "user.get", execution: "never" }), file("user.get.ts"));
    registry.add(def({ id: "work.run" }), { kind: "builtin", file: "work.run.ts" });
    expect(registry.get("plane.get")!.plane).toBe(true);
    expect(registry.get("user.get")!.plane).toBe(false);
    expect(registry.get("work.run")!.plane).toBe(false);
  });

  test("CapabilityRegistry.add keeps the first of two equal ids and names both files", () => {
    const registry = new CapabilityRegistry();
    registry.add(def({ id: "dup.id" }), file("dup.id.ts"));
    const second = { kind: "file" as const, file: "/elsewhere/dup.id.ts" };
    expect(registry.add(def({ id: "dup.id", title: "Second" }), second)).toBeNull();
    expect(registry.get("dup.id")!.title).toBe("Count files");
    const [error] = registry.loadErrors();
    expect(error!.file).toBe("/elsewhere/dup.id.ts");
    expect(error!.reason).toContain("/work/x/capabilities/dup.id.ts");
    expect(error!.reason).toContain('"dup.id"');
  });

  test("CapabilityRegistry.add refuses an id that is not lower-case dotted", () => {
    const registry = new CapabilityRegistry();
    expect(registry.add(def({ id: "Files.Count" }), file("Files.Count.ts"))).toBeNull();
    expect(registry.add(def({ id: "nodots" }), file("nodots.ts"))).toBeNull();
    const reasons = registry.loadErrors().map((e) => e.reason);
    expect(reasons[0]).toContain('id "Files.Count" must be lower-case dotted like "files.digest"');
    expect(reasons[1]).toContain('id "nodots"');
    expect(registry.list()).toEqual([]);
    // A letter that only looks like one is named (foundation tester, session 44).
    expect(registry.add(def({ id: "h\u0435llo.greet" }), file("h\u0435llo.greet.ts"))).toBeNull();
    expect(registry.loadErrors().at(-1)!.reason).toEndWith('It holds "\u0435" (U+0435), which is not an ASCII character, though it may look like one: type that letter again.');
    expect(reasons[0]).not.toContain("ASCII");
  });

  test("CapabilityRegistry.add refuses a file named after another id", () => {
    const registry = new CapabilityRegistry();
    expect(registry.add(def(), file("count.ts"))).toBeNull();
    const [error] = registry.loadErrors();
    expect(error!.file).toBe("/work/x/capabilities/count.ts");
    expect(error!.reason).toContain('named "count.ts" but declares id "files.count"');
    expect(error!.reason).toContain('"files.count.ts"');
  });

  test("CapabilityRegistry.add accepts a .js file named after its id", () => {
    const registry = new CapabilityRegistry();
    expect(registry.add(def(), file("files.count.js"))).not.toBeNull();
  });

  test("CapabilityRegistry.add points a problem at its line when given the source text", () => {
    const registry = new CapabilityRegistry();
    const text = 'import { capability } from "docket";\n\nexport default capability({\n  id: "Bad.Id",\n});\n';
    registry.add(def({ id: "Bad.Id" }), file("Bad.Id.ts"), { text });
    expect(registry.loadErrors()[0]).toMatchObject({ line: 4, column: 3 });
  });

  test("CapabilityRegistry.add refuses a misspelled field instead of registering the capability without it", () => {
    const registry = new CapabilityRegistry();
    const text = 'export default capability({\n  id: "files.count",\n  cancelable: true,\n});\n';
    expect(registry.add(def({ cancelable: true }), file("files.count.ts"), { text })).toBeNull();
    expect(registry.get("files.count")).toBeNull();
    expect(registry.loadErrors()).toEqual([
      { file: "/work/x/capabilities/files.count.ts", line: 3, column: 3, reason: '"cancelable" is not a declaration field. Did you mean "cancellable"?' },
    ]);
  });

  test("CapabilityRegistry.add refuses missing or invalid title, description, effect and handler", () => {
    const registry = new CapabilityRegistry();
    registry.add(def({ title: "", description: undefined, effect: "delete", handler: "nope" }), file("files.count.ts"));
    const reasons = registry.loadErrors().map((e) => e.reason);
    expect(reasons).toContainEqual(expect.stringContaining("title must be a non-empty string"));
    expect(reasons).toContainEqual(expect.stringContaining("description must be a non-empty string, got nothing"));
    expect(reasons).toContainEqual(expect.stringContaining('effect must be "read" or "write", got "delete"'));
    expect(reasons).toContainEqual(expect.stringContaining("handler must be a function"));
  });

  test("CapabilityRegistry.add refuses schemas that are not valibot schemas", () => {
    const registry = new CapabilityRegistry();
    registry.add(def({ input: { type: "object" }, output: undefined }), file("files.count.ts"));
    const reasons = registry.loadErrors().map((e) => e.reason);
    expect(reasons).toEqual([expect.stringContaining("input must be a valibot schema"), expect.stringContaining("output must be a valibot schema")]);
  });

  test("CapabilityRegistry.add refuses a schema with no JSON Schema form", () => {
    const registry = new CapabilityRegistry();
    registry.add(def({ input: v.object({ when: v.date() }) }), file("files.count.ts"));
    const [error] = registry.loadErrors();
    expect(error!.reason).toContain("input.when");
    expect(error!.reason).toContain('"date"');
  });

  test("CapabilityRegistry.add checks every example against the input schema", () => {
    const registry = new CapabilityRegistry();
    registry.add(def({ examples: [{ path: "ok" }, { path: 3 }] }), file("files.count.ts"));
    const [error] = registry.loadErrors();
    expect(error!.reason).toContain("examples[1] does not match the input schema: input.path:");
  });

  test("an example that does not match is refused without the value it holds: it may be computed, a secret read from the environment (tester R2)", () => {
    const registry = new CapabilityRegistry();
    registry.add(def({ input: v.object({ token: sensitive(v.pipe(v.string(), v.regex(/^xoxb-/))) }), examples: [{ token: "LEAKtokpw" }] }), file("files.count.ts"));
    const [error] = registry.loadErrors();
    expect(error!.reason).toStartWith("examples[0] does not match the input schema: input.token: Invalid format: Expected /^xoxb-/");
    expect(error!.reason).not.toContain("LEAK");
  });

  test("CapabilityRegistry.add refuses error codes that are not lower snake case", () => {
    const registry = new CapabilityRegistry();
    registry.add(def({ errors: ["ok_code", "Bad-Code"] }), file("files.count.ts"));
    expect(registry.loadErrors().map((e) => e.reason)).toEqual([expect.stringContaining('error code "Bad-Code" must be lower snake case')]);
  });

  test("CapabilityRegistry.add turns a value that is no declaration into a load error, never an exception", () => {
    const registry = new CapabilityRegistry();
    for (const value of [null, 42, "x", () => 1, {}]) expect(registry.add(value, file("files.count.ts"))).toBeNull();
    expect(registry.loadErrors()).toHaveLength(5);
    expect(registry.loadErrors()[0]!.reason).toContain("not a capability");
  });

  test("CapabilityRegistry.loadErrors returns copies", () => {
    const registry = new CapabilityRegistry();
    registry.addLoadError({ file: "a.ts", line: 1, column: 2, reason: "broken" });
    registry.loadErrors()[0]!.reason = "changed";
    expect(registry.loadErrors()[0]!.reason).toBe("broken");
  });

  test("a secret given as an example (read from the environment, say) is published redacted, as a stored input is; the rest as declared (tester R2)", () => {
    const registry = new CapabilityRegistry();
    const added = registry.add(def({ input: v.object({ path: v.string(), token: sensitive(v.string()) }), examples: [{ path: "src", token: "LEAKtokpw" }] }), file("files.count.ts"));
    expect(added!.examples).toEqual([{ path: "src", token: "[redacted]" }]);
  });
});

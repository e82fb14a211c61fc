import { describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { BUILTIN_DIR, BUILTINS } from "../../runtime/capability/builtins.ts";
import { isCapabilityFileName } from "../../runtime/capability/inspect.ts";
import { CapabilityRegistry } from "../../runtime/capability/registry.ts";

const folder = join(import.meta.dir, "../../capabilities");

describe("BUILTINS", () => {
  test("BUILTINS lists every file of capabilities/ and nothing else", async () => {
    const files = (await readdir(folder)).filter(isCapabilityFileName).sort();
    expect(Object.keys(BUILTINS).sort()).toEqual(files);
  });

  test("BUILTINS all register without a load error, each under its file name", () => {
    const registry = new CapabilityRegistry();
    for (const [name, def] of Object.entries(BUILTINS)) registry.add(def, { kind: "builtin", file: name });
    expect(registry.loadErrors()).toEqual([]);
    expect(registry.list().map((c) => `${c.id}.ts`)).toEqual(Object.keys(BUILTINS).sort());
  });

  test("BUILTIN_DIR is the capabilities folder when docket runs from source", () => {
    expect(BUILTIN_DIR.replace(/\/$/, "")).toBe(folder);
  });
});

// docs/ stays true: code points at files that exist, never at a document outside the repository,
// and the handler API reference names every member a handler receives and a declaration takes.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../", import.meta.url));
const SOURCE_FOLDERS = ["runtime", "capabilities", "cockpit", "scripts", "bench", "tests", "examples"];

function* sourceFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|tsx|js|css)$/.test(name)) yield path;
  }
}

/** The members of `interface <name> { … }` in a source file, one per line as this repository writes them. */
function interfaceMembers(file: string, name: string): string[] {
  const text = readFileSync(join(REPO, file), "utf8");
  const body = text.slice(text.indexOf(`interface ${name}`));
  const block = body.slice(body.indexOf("{") + 1, body.indexOf("\n}"));
  return [...block.matchAll(/^ {2}(?:readonly )?([a-z][A-Za-z_]*)\??[(:]/gm)].map((m) => m[1]!);
}

describe("docs/", () => {
  test("no code comment cites SPEC sections; every docs/ file a source names exists", () => {
    const citing: string[] = [];
    const missing: string[] = [];
    for (const folder of SOURCE_FOLDERS) {
      for (const file of sourceFiles(join(REPO, folder))) {
        if (file.endsWith("docs.test.ts")) continue;
        const text = readFileSync(file, "utf8");
        if (/SPEC\s?§/.test(text)) citing.push(file);
        // Tests write fixture checkouts with docs/ folders of their own: only code and examples point at ours.
        if (folder === "tests") continue;
        for (const [doc] of text.matchAll(/docs\/[a-z-]+\.md/g)) if (!existsSync(join(REPO, doc))) missing.push(`${file}: ${doc}`);
      }
    }
    expect(citing).toEqual([]);
    expect(missing).toEqual([]);
  });

  test("docs/handler-api.md names every ctx member and every declaration option", () => {
    const reference = readFileSync(join(REPO, "docs", "handler-api.md"), "utf8");
    const ctx = interfaceMembers("runtime/capability/declaration.ts", "CapabilityContext").filter((m) => m !== "plane");
    const progress = interfaceMembers("runtime/capability/declaration.ts", "ProgressReporter");
    const declaration = interfaceMembers("runtime/capability/declaration.ts", "CapabilityDef");
    expect(ctx).toEqual(expect.arrayContaining(["progress", "signal", "root", "artifacts", "execution"]));
    expect(progress).toEqual(expect.arrayContaining(["step", "stepDone", "progress", "log", "stream", "diagnostic", "cancelled", "cancellation"]));
    expect(declaration).toEqual(expect.arrayContaining(["id", "effect", "input", "output", "handler", "execution", "timeout_ms", "cache", "examples"]));
    expect(ctx.filter((m) => !reference.includes(`ctx.${m}`))).toEqual([]);
    expect(progress.filter((m) => !reference.includes(`ctx.progress.${m}(`) && !reference.includes(`.${m}(`))).toEqual([]);
    expect(declaration.filter((m) => !reference.includes(`\`${m}\``) && !reference.includes(`\`${m}(`))).toEqual([]);
  });

  test("the repository carries its licence and the docs the README points at", () => {
    expect(readFileSync(join(REPO, "LICENSE"), "utf8")).toContain("MIT License");
    for (const doc of ["handler-api.md", "protocol.md", "architecture.md", "limits.md", "editor-types.md", "security.md"]) expect(existsSync(join(REPO, "docs", doc))).toBe(true);
  });
});

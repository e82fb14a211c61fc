import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { globMatcher, globToRegExp } from "../../runtime/capability/glob.ts";

describe("globToRegExp", () => {
  const cases: Array<[string, string, boolean]> = [
    ["*.ts", "a.ts", true],
    ["*.ts", "a/b.ts", false],
    ["*.ts", ".hidden.ts", true],
    ["**/*.ts", "a.ts", true],
    ["**/*.ts", "a/b/c.ts", true],
    ["a/**/b", "a/b", true],
    ["a/**/b", "a/x/y/b", true],
    ["a/**/b", "ab", false],
    ["a/**", "a", true],
    ["a/**", "a/x/y", true],
    ["a/**", "ab/x", false],
    ["**", "x/y", true],
    ["**/**", "x/y", true],
    ["src/*", "src/a/b", false],
    ["{a,b}.js", "b.js", true],
    ["{a,b}.js", "c.js", false],
    ["x.{ts,{js,mjs}}", "x.mjs", true],
    ["[a-c]?.md", "bx.md", true],
    ["[a-c]?.md", "dx.md", false],
    ["[!a]x", "ax", false],
    ["[!a]x", "bx", true],
    ["a?c", "a/c", false],
    ["a.b", "axb", false],
    ["(a)+", "(a)+", true],
    ["{a", "{a", true],
    ["\\*x", "*x", true],
    ["\\*x", "ax", false],
  ];
  for (const [pattern, path, expected] of cases) {
    test(`globToRegExp ${JSON.stringify(pattern)} ${expected ? "matches" : "does not match"} ${JSON.stringify(path)}`, () => {
      expect(globToRegExp(pattern).test(path)).toBe(expected);
    });
  }

  test("globToRegExp matches a pattern with no special characters only to itself", () => {
    const segment = fc.stringMatching(/^[a-zA-Z0-9._+()$^|-]{1,8}$/);
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 4 }), fc.array(segment, { minLength: 1, maxLength: 4 }), (a, b) => {
        const pattern = a.join("/");
        const other = b.join("/");
        expect(globToRegExp(pattern).test(pattern)).toBe(true);
        expect(globToRegExp(pattern).test(other)).toBe(pattern === other);
      }),
    );
  });
});

describe("globMatcher", () => {
  test("globMatcher matches a pattern without / against a name at any depth", () => {
    const matches = globMatcher(["node_modules", "*.log"]);
    expect(matches("node_modules")).toBe(true);
    expect(matches("a/node_modules/x.js")).toBe(true);
    expect(matches("deep/er/debug.log")).toBe(true);
    expect(matches("src/modules.ts")).toBe(false);
  });

  test("globMatcher anchors a pattern with / and covers everything below a matching folder", () => {
    const matches = globMatcher(["src/gen", "./dist/", "/top.txt"]);
    expect(matches("src/gen/a/b.ts")).toBe(true);
    expect(matches("lib/src/gen/a.ts")).toBe(false);
    expect(matches("dist/a.js")).toBe(true);
    expect(matches("top.txt")).toBe(true);
    expect(matches("a/top.txt")).toBe(false);
  });

  test("globMatcher with no patterns matches nothing", () => {
    expect(globMatcher([])("a")).toBe(false);
  });
});

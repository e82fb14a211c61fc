import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { compileGlob, globMatcher, MAX_GLOB_CHARS, MAX_GLOBS_CHARS } from "../../runtime/capability/glob.ts";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { regexGlob } from "./_regex-glob.ts";

describe("compileGlob", () => {
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
    test(`compileGlob ${JSON.stringify(pattern)} ${expected ? "matches" : "does not match"} ${JSON.stringify(path)}`, () => {
      expect(compileGlob(pattern)(path)).toBe(expected);
    });
  }

  test("compileGlob matches a pattern with no special characters only to itself", () => {
    const segment = fc.stringMatching(/^[a-zA-Z0-9._+()$^|-]{1,8}$/);
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 4 }), fc.array(segment, { minLength: 1, maxLength: 4 }), (a, b) => {
        const pattern = a.join("/");
        const other = b.join("/");
        expect(compileGlob(pattern)(pattern)).toBe(true);
        expect(compileGlob(pattern)(other)).toBe(pattern === other);
      }),
    );
  });
});

describe("compileGlob without backtracking (foundation tester, session 50: thirty `*a` against a 200-character name held a worker for a minute)", () => {
  test("matches what the RegExp it replaced matched, for random patterns and paths", () => {
    const patternPart = fc.constantFrom("a", "b", "*", "?", "**", "/", "[ab]", "[!a]", "{a,b}", "{a,}", "\\*", ".", "x{a,{b,c}}");
    const pathPart = fc.constantFrom("a", "b", "/", ".", "*", "x", "ab");
    fc.assert(
      fc.property(fc.array(patternPart, { maxLength: 8 }), fc.array(pathPart, { maxLength: 8 }), (pattern, path) => {
        expect(compileGlob(pattern.join(""))(path.join(""))).toBe(regexGlob(pattern.join("")).test(path.join("")));
      }),
      { numRuns: 5000 },
    );
  });

  test("a pattern of many stars against a long name that does not match answers at once", () => {
    const name = "a".repeat(200);
    const pattern = `${"*a".repeat(30)}*b`;
    const started = performance.now();
    expect(compileGlob(pattern)(name)).toBe(false);
    expect(globMatcher([pattern])(`dir/${name}`)).toBe(false);
    expect(compileGlob(`${"*a".repeat(30)}*`)(name)).toBe(true);
    expect(compileGlob(`**/${"**/a/".repeat(20)}b`)(`${"a/".repeat(60)}c`)).toBe(false);
    // Not a timing assertion: the RegExp took about a minute; anything under ten seconds is the fix.
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  test("braces cost no more than their characters: ten {a,a} before a long run of a against deep long names answers at once (checking tester, session 50: 1,024 expansions walked one by one held a worker a minute)", () => {
    const name = "a".repeat(250);
    const path = Array.from({ length: 8 }, () => name).join("/");
    const pattern = `*${"{a,a}".repeat(10)}${"a".repeat(120)}b`;
    const started = performance.now();
    expect(globMatcher([pattern])(path)).toBe(false);
    expect(compileGlob(`${"{a,b}".repeat(100)}`)("ab".repeat(50))).toBe(true);
    // Not a timing assertion: expanded, it took seconds a path; anything under ten seconds is the fix.
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  test("a path and every folder above it are read through an anchored glob once: a deep path answers at once (checking tester, session 50: 2.2 s at depth 1,000)", () => {
    const pattern = `**/${"a/".repeat(50)}b`;
    const deep = Array.from({ length: 2000 }, () => "a").join("/");
    const started = performance.now();
    expect(globMatcher([pattern])(deep)).toBe(false);
    expect(globMatcher([pattern])(`${deep}/b/c`)).toBe(true);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  test("a glob longer than MAX_GLOB_CHARS, globs longer than MAX_GLOBS_CHARS together, and a class range out of order are refused as invalid_input naming them", () => {
    const refusal = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        return CapabilityError.is(error) ? [error.code, error.message] : ["not a CapabilityError", String(error)];
      }
      return null;
    };
    expect(refusal(() => globMatcher(["x".repeat(MAX_GLOB_CHARS + 1)]))).toEqual(["invalid_input", expect.stringContaining(`more than ${MAX_GLOB_CHARS}`)]);
    expect(refusal(() => globMatcher(Array.from({ length: 20 }, () => "y".repeat(MAX_GLOB_CHARS))))).toEqual(["invalid_input", expect.stringContaining(`more than ${MAX_GLOBS_CHARS}`)]);
    expect(refusal(() => compileGlob("[z-a].txt"))).toEqual(["invalid_input", expect.stringContaining("write it a-z")]);
    expect(refusal(() => globMatcher(["x".repeat(MAX_GLOB_CHARS)]))).toBeNull();
  });

  test("{…} may hold a / (one alternative of several segments)", () => {
    expect(compileGlob("{a/b,c}.ts")("a/b.ts")).toBe(true);
    expect(compileGlob("{a/b,c}.ts")("c.ts")).toBe(true);
    expect(compileGlob("{a/b,c}.ts")("a.ts")).toBe(false);
  });

  test("an unclosed { takes every brace literally, escapes included", () => {
    expect(compileGlob("{a,b")("{a,b")).toBe(true);
    expect(compileGlob("\\{a{b")("{a{b")).toBe(true);
    expect(compileGlob("x}{a,b}")("x}b")).toBe(true);
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

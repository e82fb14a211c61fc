import { describe, expect, test } from "bun:test";
import { parseJsonc } from "../../runtime/capability/jsonc.ts";

describe("parseJsonc", () => {
  test("reads what tsc --init writes: line and block comments, trailing commas, a byte order mark", () => {
    const text = `\ufeff{
  /* Visit https://aka.ms/tsconfig to read more */
  "compilerOptions": {
    "target": "es2016", // the target
    "paths": { "@/*": ["./src/*"], },
  },
  "exclude": ["node_modules", "dist", /* later */],
}`;
    expect(parseJsonc(text)).toEqual({ compilerOptions: { target: "es2016", paths: { "@/*": ["./src/*"] } }, exclude: ["node_modules", "dist"] });
  });

  test("comment and comma look-alikes inside strings are text", () => {
    expect(parseJsonc('{"a": "http://x/*y*/", "b": "1,]", "c": "quote \\" // not a comment"}')).toEqual({ a: "http://x/*y*/", b: "1,]", c: 'quote " // not a comment' });
  });

  test("what is not JSON even so is a SyntaxError", () => {
    expect(() => parseJsonc("{ a: 1 }")).toThrow(SyntaxError);
    expect(() => parseJsonc('{"a": 1 "b": 2}')).toThrow(SyntaxError);
  });
});

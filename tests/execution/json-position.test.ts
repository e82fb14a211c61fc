import { describe, expect, test } from "bun:test";
import { jsonErrorPosition, jsonParseReason } from "../../runtime/execution/json-position.ts";

describe("jsonErrorPosition", () => {
  test("JSON texts have no error position", () => {
    for (const text of ['{"a":[1,2.5e-3,-0,true,false,null,"x\\n\\u00e9"]}', " [] ", "0", '"s"', '{"a":{"b":{}}}']) {
      expect(JSON.parse(text)).toBeDefined();
      expect(jsonErrorPosition(text)).toBeNull();
    }
  });

  test("the first character that is not JSON, by line and column, wherever the mistake is", () => {
    expect(jsonErrorPosition('{"a":"x",}')).toEqual({ line: 1, column: 10 });
    expect(jsonErrorPosition('{"limit": ten}')).toEqual({ line: 1, column: 12 });
    expect(jsonErrorPosition('{\n  "a": 1\n  "b": 2\n}')).toEqual({ line: 3, column: 3 });
    expect(jsonErrorPosition('{"a":"never closed')).toEqual({ line: 1, column: 19 });
    expect(jsonErrorPosition("[1,2")).toEqual({ line: 1, column: 5 });
    expect(jsonErrorPosition("01")).toEqual({ line: 1, column: 2 });
    expect(jsonErrorPosition("1.")).toEqual({ line: 1, column: 3 });
    expect(jsonErrorPosition('"bad \\q escape"')).toEqual({ line: 1, column: 7 });
    expect(jsonErrorPosition('"tab\there"')).toEqual({ line: 1, column: 5 });
    expect(jsonErrorPosition("{} {}")).toEqual({ line: 1, column: 4 });
    expect(jsonErrorPosition("tru")).toEqual({ line: 1, column: 4 });
    expect(jsonErrorPosition("")).toEqual({ line: 1, column: 1 });
  });

  test("a text nested deeper than it looks says nothing rather than recurse without end", () => {
    expect(jsonErrorPosition("[".repeat(100_000))).toBeNull();
    expect(jsonErrorPosition(`${"[".repeat(100)}x`)).toEqual({ line: 1, column: 101 });
  });

  const reasonOf = (text: string) => {
    try {
      JSON.parse(text);
    } catch (error) {
      return jsonParseReason(error);
    }
    throw new Error("parsed");
  };

  test("jsonParseReason says what is wrong without a character of the text (tester T)", () => {
    expect(reasonOf('{"pin":"sec\\u12"}')).toBe("an invalid \\u escape");
    expect(reasonOf('"a\\qsecret"')).toBe("an invalid escape character");
    expect(reasonOf('{"a":hunter2}')).toBe("Unexpected identifier");
    expect(reasonOf("[1,]")).toBe("Unexpected comma at the end of array expression");
    expect(reasonOf('{"pin": #1234}')).toBe("Unrecognized token");
    expect(reasonOf('{"pin": €}')).not.toContain("€");
    for (const text of ['{"pin":"sec\\u12"}', '"a\\qsecret"', '{"a":hunter2}']) expect(reasonOf(text)).not.toMatch(/sec|q|hunter/);
  });

  test("jsonParseReason keeps the grammar the parser names: the character it expected, the quote it refuses", () => {
    expect(reasonOf('{name:"x"}')).toBe("Expected '}'");
    expect(reasonOf("{'name':'x'}")).toBe("Single quotes (') are not allowed in JSON");
    expect(reasonOf('{"a" 1}')).toBe("Expected ':' before value in object property definition");
    expect(reasonOf("[1 2]")).toBe("Expected ']'");
    // A quoted word is the text's, even beside the grammar.
    expect(reasonOf("{'token':'hunter2'}")).not.toContain("hunter2");
    // V8 (Node) quotes the whole text, inner quotes and all: none of it is kept.
    expect(jsonParseReason(new SyntaxError(`Unexpected token 'h', "{"pin":hunter2}" is not valid JSON`))).toBe("Unexpected token is not valid JSON");
  });
});

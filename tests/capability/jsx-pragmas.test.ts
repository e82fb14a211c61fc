// The JSX pragmas a module sets itself, as TypeScript and the runtime read them (capability/compile-options.ts).
import { describe, expect, test } from "bun:test";
import { jsxPragmasOf, jsxRuntimeSourceOf } from "../../runtime/capability/compile-options.ts";
import { compiledText } from "../../runtime/adapter/_compiled-text.ts";

describe("jsxPragmasOf", () => {
  test("reads pragmas in comments, each word ending at a space or the comment's *, never in a string or an address", () => {
    expect(jsxPragmasOf("/** @jsxImportSource preact */\nexport const a = 1;")).toEqual({ importSource: "preact" });
    // No space before the comment's end (checking tester, session 47: read as `fakeb*/`).
    expect(jsxPragmasOf("/* @jsxImportSource fakeb*/")).toEqual({ importSource: "fakeb" });
    expect(jsxPragmasOf("/** @jsxRuntime classic @jsx h @jsxFrag Fragment */")).toEqual({ runtime: "classic", factory: "h", fragment: "Fragment" });
    expect(jsxPragmasOf("// @jsxImportSource hono/jsx\n")).toEqual({ importSource: "hono/jsx" });
    expect(jsxPragmasOf('const note = "docs: a file may set @jsxImportSource itself";')).toBeNull();
    expect(jsxPragmasOf("// questions: ui@jsxworks.dev\n")).toBeNull();
    // A `//` or `/*` inside a string or a template is no comment (second checking tester, session 47).
    expect(jsxPragmasOf('const note = "docs: https://example.com/@jsx h";')).toBeNull();
    expect(jsxPragmasOf("const a = 'see // @jsxImportSource ghost';\nconst b = `/* @jsxImportSource ghost */ ${a}`;")).toBeNull();
    expect(jsxPragmasOf('const q = "it\\"s // not";\n/** @jsxImportSource real */')).toEqual({ importSource: "real" });
    // A backtick inside a substitution does not end the template (third checking tester).
    expect(jsxPragmasOf('const q = "`";\nexport const help = `${q + "`"}` + `\n/* @jsxImportSource preact */\n`;')).toBeNull();
    expect(jsxPragmasOf("const t = `a ${ { b: `c ${1}` }.b } d`; // @jsxImportSource after\n")).toEqual({ importSource: "after" });
  });

  test("the runtime a module's JSX imports: its pragma, then its tsconfig's options, then react; none when classic", () => {
    expect(jsxRuntimeSourceOf("", {})).toBe("react");
    expect(jsxRuntimeSourceOf("", { jsxImportSource: "hono/jsx" })).toBe("hono/jsx");
    expect(jsxRuntimeSourceOf("/** @jsxImportSource preact */", { jsxImportSource: "hono/jsx" })).toBe("preact");
    expect(jsxRuntimeSourceOf("", { jsx: "react", jsxFactory: "h" })).toBeNull();
    expect(jsxRuntimeSourceOf("/** @jsxRuntime classic */", {})).toBeNull();
    expect(jsxRuntimeSourceOf("/** @jsxRuntime automatic */", { jsx: "react" })).toBe("react");
  });

  test("a string that mentions @jsxImportSource does not keep the tsconfig's import source from the module (checking tester, session 47)", () => {
    const text = 'const note = "docs: a file may set @jsxImportSource itself";\nexport const view = () => <u>h</u>;\n';
    expect(compiledText(text, "tsx", { jsx: "react-jsx", jsxImportSource: "faked" }).contents).toStartWith("/** @jsxImportSource faked */ ");
    // Its own pragma is kept alone.
    expect(compiledText(`/** @jsxImportSource preact */\n${text}`, "tsx", { jsxImportSource: "faked" }).contents).toStartWith("/** @jsxImportSource preact */\n");
  });
});

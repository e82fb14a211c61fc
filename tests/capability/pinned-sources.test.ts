import { describe, expect, test } from "bun:test";
import { looksCommonJs } from "../../runtime/capability/pinned-sources.ts";

// Which capability files are imported unpinned (docs/containment.md, "Loading"): CommonJS only,
// told apart from ES modules by their statements, not by words in comments or strings.
describe("looksCommonJs", () => {
  const cases: Array<[string, string, boolean]> = [
    ["require and module.exports", 'const { capability } = require("docket");\nmodule.exports = capability({});', true],
    ["a comment line starting with import", '/*\n import notes: this file is CommonJS on purpose\n*/\nconst { capability } = require("docket");\nmodule.exports = capability({});', true],
    ["exports.x", "exports.handler = 1;", true],
    ["a variable named imports", "const imports = [];\nmodule.exports = imports;", true],
    ["dynamic import() in CommonJS", 'const m = await import("./x.ts");\nmodule.exports = m;', true],
    ["an import after a comment on its line, require( in a string", '/* c */ import { capability } from "docket";\nconst note = "not require(x)";\nexport default capability({});', false],
    ["module.exports in a comment", 'import { capability } from "docket";\n// module.exports = x\nexport default capability({});', false],
    ["a side-effect import", 'import "./side.ts";\nconst r = require("x");', false],
    ["export{…} without a space", "export{a};\nconst a = require('x');", false],
    ["import.meta", 'console.log(import.meta.url); const r = require("x");', false],
    ["require( in a template literal", "const s = `template with require( inside`;\nexport default 1;", false],
    ["plain ESM", 'import * as v from "valibot";\nexport const a = 1;', false],
  ];
  for (const [what, text, expected] of cases) {
    test(`${what}: ${expected ? "CommonJS" : "an ES module"}`, () => expect(looksCommonJs(text)).toBe(expected));
  }
});
